"""Saves models on one Keras backend and checks them on another:
`python -m tests.across_backends.saved_models save FOLDER` writes, for
the backend it runs on (`KERAS_BACKEND`), each model of `MODELS` as
`FOLDER/<backend>/<name>.keras` with its inputs and outputs
(`<name>.npz`); `check FOLDER` loads every other backend's files, runs
each model on its inputs and prints one JSON line per model with the
largest difference to the outputs its own backend computed."""

import json
import os
import sys

import keras
import numpy as np

from keras_capsules import layers, models
from tests.test_conformance import LAYER_CASES

BACKEND = keras.backend.backend()
# Relative and absolute: float32 rounding of the same sums in another
# order (another backend's kernels), carried through routing iterations.
TOLERANCE = 1e-5
# EM and variational Bayes routing's three iterations amplify float32
# rounding: on TensorFlow alone, the same weights and inputs give outputs
# 4.3e-5 (classifier_em), 3.1e-5 (classifier_variational_bayes, outputs
# of size 0.8) and 8.0e-3 (small_matrix_capsnet, three EM layers) apart
# eagerly and under XLA (measured; sums in another order). Other
# backends' kernels differ as much. In float64 the same layers agree
# across backends to float64's rounding (the `float64_` cases: 1e-14
# measured).
AMPLIFIED_TOLERANCES = {
    "classifier_em": 1e-4,
    "classifier_variational_bayes": 1e-4,
    "small_matrix_capsnet": 2e-2,
}
# The routing layers under a float64 policy: every backend computes the
# same function, so only float64's rounding separates them.
FLOAT64_TOLERANCE = 1e-10


def _classifier(routing):
    return lambda: models.capsule_classifier((28, 28, 1), 10, routing=routing)


def _layer_model(case):
    def build():
        return case.make_model()

    return build, case.make_inputs


def _float64_routing(layer, input_shapes):
    def build():
        inputs = [keras.Input(shape, dtype="float64") for shape in input_shapes]
        return keras.Model(inputs, layer(dtype="float64")(inputs))

    def make_inputs(batch=3, seed=0):
        rng = np.random.default_rng(seed)
        return [rng.normal(size=(batch, *shape)) for shape in input_shapes]

    return build, make_inputs


def _image_inputs(shape):
    def make(batch=3, seed=0):
        rng = np.random.default_rng(seed)
        return rng.uniform(size=(batch, *shape)).astype("float32")

    return make


def _models():
    """`{name: (build, make_inputs)}`: each layer of the conformance table
    that runs on every backend, as a model, and the classifiers."""
    cases = {
        f"layer_{case.name}": _layer_model(case)
        for case in LAYER_CASES
        if len(case.backends) == 3
    }
    cases.update(
        {
            "float64_dynamic_routing": _float64_routing(
                lambda **kw: layers.DynamicRouting(3, 4, **kw),
                [(6,), (6, 1, 5)],
            ),
            "float64_heinsen_routing": _float64_routing(
                lambda **kw: layers.HeinsenRouting(3, 2, **kw),
                [(5,), (5, 2, 3)],
            ),
            "float64_em_routing": _float64_routing(
                lambda **kw: layers.MatrixCapsuleEMRouting(3, **kw),
                [(5,), (5, 4, 4)],
            ),
            "float64_conv_matrix_capsules": _float64_routing(
                lambda **kw: layers.ConvMatrixCapsules(3, 3, 1, **kw),
                [(5, 5, 2), (5, 5, 2, 4, 4)],
            ),
        }
    )
    mnist = _image_inputs((28, 28, 1))
    cases.update(
        {
            f"classifier_{routing}": (_classifier(routing), mnist)
            for routing in models.ROUTINGS
        }
    )
    cases["capsnet_small"] = (
        lambda: models.capsnet((28, 28, 1), 10, config="small"),
        mnist,
    )
    cases["small_matrix_capsnet"] = (
        models.small_matrix_capsnet,
        _image_inputs((32, 32, 1)),
    )
    return cases


MODELS = _models()


def _outputs(model, inputs):
    return [
        keras.ops.convert_to_numpy(output)
        for output in keras.tree.flatten(model(inputs))
    ]


def save(folder):
    """Writes each model of `MODELS`, its inputs and outputs."""
    folder = os.path.join(folder, BACKEND)
    os.makedirs(folder, exist_ok=True)
    for name, (build, make_inputs) in MODELS.items():
        keras.utils.set_random_seed(0)
        model = build()
        inputs = make_inputs()
        outputs = _outputs(model, inputs)
        model.save(os.path.join(folder, f"{name}.keras"))
        flat_inputs = keras.tree.flatten(inputs)
        np.savez(
            os.path.join(folder, f"{name}.npz"),
            **{f"input_{i}": x for i, x in enumerate(flat_inputs)},
            **{f"output_{i}": y for i, y in enumerate(outputs)},
            packed=isinstance(inputs, list),
        )


def check(folder):
    """One record per model another backend saved in `folder`: the
    largest difference between its outputs here and there, and whether it
    is within `TOLERANCE`."""
    records = []
    for saved_on in sorted(os.listdir(folder)):
        if saved_on == BACKEND:
            continue
        for name in MODELS:
            path = os.path.join(folder, saved_on, name)
            arrays = np.load(f"{path}.npz")
            count = sum(key.startswith("input_") for key in arrays)
            inputs = [arrays[f"input_{i}"] for i in range(count)]
            inputs = inputs if bool(arrays["packed"]) else inputs[0]
            model = keras.saving.load_model(f"{path}.keras")
            got = _outputs(model, inputs)
            tolerance = AMPLIFIED_TOLERANCES.get(name, TOLERANCE)
            if name.startswith("float64_"):
                tolerance = FLOAT64_TOLERANCE
            want = [arrays[f"output_{i}"] for i in range(len(got))]
            records.append(
                {
                    "model": name,
                    "saved_on": saved_on,
                    "loaded_on": BACKEND,
                    "outputs": len(got),
                    "saved_outputs": sum(
                        k.startswith("output_") for k in arrays
                    ),
                    "max_difference": max(
                        float(np.max(np.abs(g - w), initial=0.0))
                        for g, w in zip(got, want)
                    ),
                    "tolerance": tolerance,
                    "close": all(
                        np.allclose(g, w, rtol=tolerance, atol=tolerance)
                        for g, w in zip(got, want)
                    ),
                }
            )
    return records


if __name__ == "__main__":
    command, folder = sys.argv[1:]
    if command == "save":
        save(folder)
    else:
        for record in check(folder):
            print(json.dumps(record))
