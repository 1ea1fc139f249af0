"""Every model exports to SavedModel, ONNX and LiteRT, and each file
predicts in its own runtime what Keras predicts: TensorFlow's
`saved_model.load`, onnxruntime, and LiteRT's interpreter (builtin ops
only)."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf
from absl.testing import absltest, parameterized

from keras_capsules import models

# Between a runtime's outputs and Keras's: float32 sums in another order.
TOLERANCE = 1e-4
# At their initial weights some models are nearly constant or badly
# conditioned in float32, and a comparison there says little: the Heinsen
# routings' class scores start at 0 whatever the input, capsule
# regression's spread 2.6e-4 and CapsNet's capsule lengths 1.7e-4, and
# small_matrix_capsnet's float32 outputs are 3.3e-4 from its float64 ones
# (its class votes' variances differ across the classes by 8e-5 of their
# size, dominated by coordinate addition, and float32 computes them to
# 5e-7 of it; its runtimes were 2.2e-4 to 3.2e-4 from Keras there). Their
# trainable weights are moved by a random draw first (small_matrix_capsnet
# then: 9e-8 to 7e-7 from Keras, measured).
_MOVED_WEIGHTS = (
    "capsnet",
    "classifier_heinsen",
    "classifier_regression",
    # Self-routing's routing weights start at 0: every class gets 1 / n.
    "classifier_self_routing",
    "heinsen_image",
    "heinsen_sequence_depths_None",
    "heinsen_sequence_depths_3",
    "small_matrix_capsnet",
)


def _images(shape):
    """Inputs of images of `shape`, uniform in [0, 1]."""
    return lambda rng: {"images": rng.uniform(size=(2, *shape))}


def _sequences(depths):
    """Embeddings of 7 tokens, per layer with `depths`, and their presence
    (the first example padded after 5 tokens)."""
    shape = (2, 7, 8) if depths is None else (2, 7, depths, 8)
    presence = np.ones((2, 7))
    presence[0, 5:] = 0.0
    return lambda rng: {
        "embeddings": rng.normal(size=shape),
        "presence": presence,
    }


def _models():
    """`{name: (build, inputs of a generator)}`."""
    cases = {
        f"classifier_{routing}": (
            lambda routing=routing: models.capsule_classifier(
                (28, 28, 1), 10, routing=routing
            ),
            _images((28, 28, 1)),
        )
        for routing in models.ROUTINGS
    }
    cases["capsnet"] = (
        lambda: models.capsnet((28, 28, 1), 10, config="small"),
        _images((28, 28, 1)),
    )
    cases["efficient_capsnet"] = (
        lambda: models.efficient_capsnet((28, 28, 1), 10),
        _images((28, 28, 1)),
    )
    cases["small_matrix_capsnet"] = (
        models.small_matrix_capsnet,
        _images((32, 32, 1)),
    )
    cases["viewpoint_cnn"] = (
        lambda: models.viewpoint_cnn(5, (32, 32, 1)),
        _images((32, 32, 1)),
    )
    cases["heinsen_image"] = (
        lambda: models.heinsen_image((28, 28, 1), 10, filters=16, num_parts=8),
        _images((28, 28, 1)),
    )
    cases["vae"] = (
        lambda: models.VariationalAutoencoder((28, 28, 1)),
        _images((28, 28, 1)),
    )
    cases["generative_capsule_autoencoder"] = (
        lambda: models.generative_capsule_autoencoder((28, 28, 1), seed=0),
        _images((28, 28, 1)),
    )
    for depths in (None, 3):
        cases[f"heinsen_sequence_depths_{depths}"] = (
            lambda depths=depths: models.heinsen_sequence(
                8, 5, num_depths=depths, num_capsules=4
            ),
            _sequences(depths),
        )
    return cases


MODELS = _models()


def _saved_model(model, inputs, folder):
    path = os.path.join(folder, "saved_model")
    model.export(path, format="tf_saved_model", verbose=False)
    served = tf.saved_model.load(path)  # kept: it owns the weights
    if len(inputs) == 1:
        return served.serve(*inputs.values())
    return served.serve([inputs[name] for name in _input_names(model)])


def _onnx(model, inputs, folder):
    import onnxruntime

    path = os.path.join(folder, "model.onnx")
    model.export(path, format="onnx", verbose=False)
    session = onnxruntime.InferenceSession(path)
    return session.run(None, _by_input_name(session.get_inputs(), inputs))[0]


def _by_input_name(entries, inputs):
    """`{runtime's input name: array}`: the one input, or for several the
    one whose name the runtime's name holds (with its own prefixes and
    suffixes)."""
    named = {}
    for entry in entries:
        name = entry if isinstance(entry, str) else entry.name
        (key,) = [key for key in inputs if key in name or len(inputs) == 1]
        named[name] = inputs[key]
    return named


def _litert(model, inputs, folder):
    from ai_edge_litert.interpreter import Interpreter

    path = os.path.join(folder, "model.tflite")
    model.export(path, format="litert", verbose=False)
    interpreter = Interpreter(model_path=path)
    entries = interpreter.get_input_details()
    named = _by_input_name([entry["name"] for entry in entries], inputs)
    for entry in entries:
        interpreter.resize_tensor_input(
            entry["index"], named[entry["name"]].shape
        )
    interpreter.allocate_tensors()
    for entry in entries:
        interpreter.set_tensor(entry["index"], named[entry["name"]])
    interpreter.invoke()
    (result,) = interpreter.get_output_details()
    return interpreter.get_tensor(result["index"])


def _input_names(model):
    return [tensor.name.split(":")[0] for tensor in model.inputs]


FORMATS = {"saved_model": _saved_model, "onnx": _onnx, "litert": _litert}


def _move_weights(model, rng):
    """Every trainable weight moved by a draw from N(0, 0.3^2)."""
    for variable in model.trainable_variables:
        value = keras.ops.convert_to_numpy(variable)
        variable.assign(value + rng.normal(scale=0.3, size=value.shape))


class ExportFormatsTest(parameterized.TestCase):
    @parameterized.named_parameters(
        (f"{name}_{form}", name, form) for name in MODELS for form in FORMATS
    )
    def test_runtime_predicts_as_keras(self, name, form):
        build, draw_inputs = MODELS[name]
        keras.utils.set_random_seed(0)
        model = build()
        rng = np.random.default_rng(0)
        inputs = {
            key: value.astype("float32")
            for key, value in draw_inputs(rng).items()
        }
        if name in _MOVED_WEIGHTS:
            _move_weights(model, rng)
        if len(inputs) == 1:
            want = model(*inputs.values())
        else:
            want = model([inputs[key] for key in _input_names(model)])
        want = keras.ops.convert_to_numpy(want)
        # Outputs that differ by far more than the tolerance.
        self.assertGreater(np.std(want), 10 * TOLERANCE)
        got = np.asarray(FORMATS[form](model, inputs, tempfile.mkdtemp()))
        np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE)


if __name__ == "__main__":
    absltest.main()
