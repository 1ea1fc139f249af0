"""The linear probe separates linearly separable classes, not others."""

import numpy as np
import pytest

from keras_capsules import trainers


def test_probe_reads_a_linear_code_and_not_noise():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=600)
    centres = np.array([[4.0, 0.0], [0.0, 4.0], [-4.0, -4.0]])
    features = centres[labels] + rng.normal(size=(600, 2))
    noise = rng.normal(size=(600, 2))
    accuracy = trainers.linear_probe_accuracy(
        features[:400],
        labels[:400],
        {
            "code": (features[400:], labels[400:]),
            "noise": (noise[400:], labels[400:]),
        },
        epochs=30,
    )
    assert accuracy["code"] > 0.95
    assert accuracy["noise"] < 0.6


def test_rejects_unflattened_features():
    with pytest.raises(ValueError, match=r"\(n, f\)"):
        trainers.linear_probe_accuracy(np.zeros((4, 2, 3)), np.zeros(4), {})
