"""The state of a matrix-capsule network before training: whether its
capsules can learn (Hinton, Sabour, Frosst 2018 want some capsules active
and some not; a model whose activations saturate, or whose routing has
committed every child before any learning, barely trains)."""

import keras
import numpy as np
from keras import ops

from keras_capsules.plots.routing_histograms import vote_distances

CAPSULE_LAYERS = ("primary_caps", "conv_caps1", "conv_caps2", "class_capsules")


def _summary(activations):
    values = np.asarray(activations, np.float64).ravel()
    return {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "fraction_below_0.2": float((values < 0.2).mean()),
        "fraction_above_0.8": float((values > 0.8).mean()),
        "max": float(values.max()),
    }


def capsule_health(model, images):
    """Activation statistics of every capsule layer of `models.matrix_capsnet`
    and the class routing's commitment, for `images`.

    Returns:
        A dict: for each of `CAPSULE_LAYERS`, the mean, std, fractions
        below 0.2 and above 0.8, and the largest value of its activations;
        `class_routing`: the mean over active children of their largest
        final assignment `max_j R_ij` (1 / n_out when uncommitted, 1 when
        every child goes to one class) and the largest assignment.
    """
    outputs = [model.get_layer(name).output[0] for name in CAPSULE_LAYERS]
    logits = keras.Model(model.input, outputs)(images)
    activations = [ops.sigmoid(ops.cast(x, "float32")) for x in logits]
    health = {
        name: _summary(ops.convert_to_numpy(value))
        for name, value in zip(CAPSULE_LAYERS, activations)
    }
    _, assignments = vote_distances(model, images)[-1]
    child_activations = np.asarray(
        ops.convert_to_numpy(activations[2]), np.float64
    ).reshape(assignments.shape[0], -1)
    largest = assignments.max(axis=-1)
    health["class_routing"] = {
        "mean_largest_assignment": float(
            (largest * child_activations).sum() / child_activations.sum()
        ),
        "max_assignment": float(largest.max()),
    }
    return health
