"""Writes the `.keras` files in `d7cdef0/`, which `test_saved_models.py`
loads.

Each file holds one small model around one routing layer, saved by the
library as it was before the routing layers shared a base
(`keras_capsules` 0.x, commit d7cdef0), with the outputs it gave on fixed
inputs. Re-running this script with a later version overwrites the files
with that version's; the point of the test is that files written before a
change still load after it, so run this only to add a new case.

Usage (at commit d7cdef0): python -m tests.saved.make_d7cdef0_models
"""

import os

import keras
import numpy as np

from keras_capsules import layers

DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "d7cdef0")


def cases():
    """`(name, model, inputs)` for each saved model."""
    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(0)

    def normal(*shape):
        return rng.normal(size=shape).astype("float32")

    vectors = keras.Input((6, 4))
    yield (
        "dynamic_routing",
        keras.Model(vectors, layers.DynamicRouting(3, 5)(vectors)),
        [normal(2, 6, 4)],
    )
    vectors = keras.Input((None, 4))
    yield (
        "dynamic_routing_shared",
        keras.Model(
            vectors, layers.DynamicRouting(3, 5, share_weights=True)(vectors)
        ),
        [normal(2, 7, 4)],
    )
    for name, kwargs, count in (
        ("heinsen_routing", {}, 6),
        ("heinsen_routing_variable_inputs", {"num_inputs": "variable"}, None),
        ("heinsen_routing_variable_outputs", {"num_capsules": None}, None),
    ):
        scores = keras.Input((count,))
        capsules = keras.Input((count, 2, 3))
        routing = layers.HeinsenRouting(
            **{"num_capsules": 4, "capsule_dim": 5, **kwargs}
        )
        yield (
            name,
            keras.Model([scores, capsules], routing([scores, capsules])),
            [normal(2, 6), normal(2, 6, 2, 3)],
        )
    activations = keras.Input((3, 3, 2))
    poses = keras.Input((3, 3, 2, 4, 4))
    yield (
        "em_routing_grid",
        keras.Model(
            [activations, poses],
            layers.MatrixCapsuleEMRouting(3)([activations, poses]),
        ),
        [rng.uniform(size=(2, 3, 3, 2)).astype("f4"), normal(2, 3, 3, 2, 4, 4)],
    )
    activations = keras.Input((5,))
    poses = keras.Input((5, 4, 4))
    yield (
        "em_routing_list",
        keras.Model(
            [activations, poses],
            layers.MatrixCapsuleEMRouting(3)([activations, poses]),
        ),
        [rng.uniform(size=(2, 5)).astype("f4"), normal(2, 5, 4, 4)],
    )


def main():
    for name, model, inputs in cases():
        outputs = model(inputs if len(inputs) > 1 else inputs[0])
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        model.save(os.path.join(DIRECTORY, f"{name}.keras"))
        np.savez(
            os.path.join(DIRECTORY, f"{name}.npz"),
            **{f"input_{k}": x for k, x in enumerate(inputs)},
            **{f"output_{k}": np.asarray(y) for k, y in enumerate(outputs)},
        )


if __name__ == "__main__":
    main()
