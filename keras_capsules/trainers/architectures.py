"""Multiclass, one-versus-all and all-versus-all capsule regression (Saul 3.4).

An architecture is a stack of K capsule regression models. Its `membership`
array `(K, m, C)` says which of the C classes capsule i of model k stands
for: an example of class c is a training example of model k with target
capsule i when `membership[k, i, c] == 1`, and is not seen by model k when no
capsule of k claims c.

```none
architecture      K            m   capsule i of model k stands for
multiclass        1            C   class i
one_vs_all        C            2   i = 0: class k;   i = 1: every other class
all_vs_all        C(C-1)/2     2   i = 0: class a_k; i = 1: class b_k > a_k
```
"""

import itertools

import numpy as np
from keras import ops

ARCHITECTURES = ("multiclass", "one_vs_all", "all_vs_all")


def membership(architecture, num_classes):
    """Returns the `(K, m, C)` 0/1 membership array of an architecture."""
    check_architecture(architecture)
    c = num_classes
    if architecture == "multiclass":
        return np.eye(c, dtype=np.float32)[None]
    if architecture == "one_vs_all":
        result = np.zeros((c, 2, c), np.float32)
        for k in range(c):
            result[k, 0, k] = 1.0
            result[k, 1] = 1.0
            result[k, 1, k] = 0.0
        return result
    pairs = list(itertools.combinations(range(c), 2))
    result = np.zeros((len(pairs), 2, c), np.float32)
    for k, (a, b) in enumerate(pairs):
        result[k, 0, a] = 1.0
        result[k, 1, b] = 1.0
    return result


def check_architecture(architecture):
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"Unknown capsule regression architecture: {architecture!r}. "
            f"Expected one of {ARCHITECTURES}."
        )


def targets_and_weights(membership_array, labels):
    """Maps class labels `(b,)` to each model's target capsule and weight.

    Returns:
        `(targets, weights)`, both `(b, K)`: the target capsule of the example
        in each model, and 1 where the model sees the example, else 0.
    """
    claims = ops.take(
        ops.convert_to_tensor(np.transpose(membership_array, (2, 0, 1))),
        ops.cast(labels, "int32"),
        axis=0,
    )  # (b, K, m)
    targets = ops.cast(ops.argmax(claims, axis=-1), "int32")
    return targets, ops.max(claims, axis=-1)


def predict_classes(architecture, membership_array, probabilities):
    """Combines the models' `(b, K, m)` probabilities into class labels `(b,)`.

    multiclass: the most probable class. one_vs_all: the class whose model is
    most certain that the input is of its class. all_vs_all: majority vote of
    the pairwise winners, ties broken by the summed probability of each class.
    """
    check_architecture(architecture)
    if architecture == "multiclass":
        return ops.cast(ops.argmax(probabilities[:, 0, :], axis=-1), "int32")
    if architecture == "one_vs_all":
        return ops.cast(ops.argmax(probabilities[:, :, 0], axis=-1), "int32")
    table = ops.convert_to_tensor(membership_array)  # (K, m, C)
    winners = ops.one_hot(
        ops.argmax(probabilities, axis=-1),
        membership_array.shape[1],
        dtype=probabilities.dtype,
    )  # (b, K, m)
    votes = ops.einsum("bkm,kmc->bc", winners, table)
    mass = ops.einsum("bkm,kmc->bc", probabilities, table)
    # A vote counts 1 and all the mass together counts less than 1.
    scores = votes + mass / (membership_array.shape[0] + 1.0)
    return ops.cast(ops.argmax(scores, axis=-1), "int32")
