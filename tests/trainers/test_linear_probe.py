"""The linear probe separates linearly separable classes, not others."""

from unittest import mock

import keras
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


def test_accuracy_is_kerass_accuracy_of_the_trained_probe():
    # The probe's accuracy is computed from its weights in NumPy; Keras's
    # own metric on the same probe gives the same fraction.
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, size=300)
    features = labels[:, None] + rng.normal(0.0, 2.0, size=(300, 5))
    probes = []
    fit = keras.Model.fit

    def recording_fit(model, *args, **kwargs):
        probes.append(model)
        return fit(model, *args, **kwargs)

    with mock.patch.object(keras.Model, "fit", recording_fit):
        accuracy = trainers.linear_probe_accuracy(
            features[:200],
            labels[:200],
            {"test": (features[200:], labels[200:])},
        )
    (probe,) = probes
    probe.compile(metrics=["accuracy"], loss=probe.loss)
    train = features[:200].astype(np.float32)
    standardised = (features[200:].astype(np.float32) - train.mean(0)) / (
        train.std(0) + 1e-6
    )
    _, expected = probe.evaluate(standardised, labels[200:], verbose=0)
    assert 0.3 < accuracy["test"] < 0.95  # a probe that errs
    assert accuracy["test"] == pytest.approx(expected, abs=1e-6)
