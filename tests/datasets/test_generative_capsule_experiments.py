"""Probe test sets: rotations and affine transformations on a canvas."""

import numpy as np
import pytest

from keras_capsules.datasets import generative_capsule_experiments as data


def test_rotation_turns_counter_clockwise_about_the_centre():
    image = np.zeros((1, 5, 5, 1), np.float32)
    image[0, 0, 2] = 1.0  # top middle
    turned = data.rotated(image, 90, 5)[0, ..., 0]
    np.testing.assert_array_equal(np.argwhere(turned > 0.5), [[2, 0]])
    np.testing.assert_allclose(data.rotated(image, 0, 5), image, atol=1e-6)
    np.testing.assert_allclose(
        data.rotated(data.rotated(image, 90, 5), -90, 5), image, atol=1e-6
    )


def test_images_are_centred_on_the_canvas():
    image = np.ones((1, 4, 4, 1), np.float32)
    canvas = data.rotated(image, 0, 8)[0, ..., 0]
    assert canvas[2:6, 2:6].sum() == pytest.approx(16.0)
    assert canvas.sum() == pytest.approx(16.0)


def test_probe_test_sets_keep_labels_and_shapes():
    images = np.random.default_rng(0).uniform(size=(6, 28, 28, 1))
    labels = np.arange(6)
    sets = data.probe_test_sets(images.astype(np.float32), labels, 40)
    assert sorted(sets) == sorted(
        [
            "rotated_0",
            "rotated_45",
            "rotated_90",
            "rotated_135",
            "rotated_180",
            "affine",
        ]
    )
    for transformed, set_labels in sets.values():
        assert transformed.shape == (6, 40, 40, 1)
        np.testing.assert_array_equal(set_labels, labels)


def test_unknown_dataset_raises():
    with pytest.raises(ValueError, match="Unknown dataset"):
        data.load_images("affnist", "test")
