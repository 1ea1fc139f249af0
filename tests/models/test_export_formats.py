"""Every classifier exports to SavedModel, ONNX and LiteRT, and each file
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
# small_matrix_capsnet's float32 outputs are themselves 3.3e-4 from its
# float64 outputs at these weights and inputs (measured; 3.7e-3 before
# EM's standardised costs were formed without their common part). At
# initialisation its class votes' variances differ across the ten
# classes by 8e-5 of their size (coordinate addition, the same for every
# class, dominates them) and float32 computes them to 5e-7 of it, so the
# classes' z-scored costs carry 0.6% rounding. The runtimes, summing in
# other orders, land within that of Keras (2.2e-4 to 3.2e-4 measured).
TOLERANCES = {"small_matrix_capsnet": 1e-3}


def _models():
    cases = {
        f"classifier_{routing}": (
            lambda routing=routing: models.capsule_classifier(
                (28, 28, 1), 10, routing=routing
            ),
            (28, 28, 1),
        )
        for routing in models.ROUTINGS
    }
    cases["capsnet"] = (
        lambda: models.capsnet((28, 28, 1), 10, config="small"),
        (28, 28, 1),
    )
    cases["small_matrix_capsnet"] = (models.small_matrix_capsnet, (32, 32, 1))
    return cases


MODELS = _models()


def _saved_model(model, images, folder):
    path = os.path.join(folder, "saved_model")
    model.export(path, format="tf_saved_model", verbose=False)
    served = tf.saved_model.load(path)  # kept: it owns the weights
    return served.serve(images)


def _onnx(model, images, folder):
    import onnxruntime

    path = os.path.join(folder, "model.onnx")
    model.export(path, format="onnx", verbose=False)
    session = onnxruntime.InferenceSession(path)
    return session.run(None, {session.get_inputs()[0].name: images})[0]


def _litert(model, images, folder):
    from ai_edge_litert.interpreter import Interpreter

    path = os.path.join(folder, "model.tflite")
    model.export(path, format="litert", verbose=False)
    interpreter = Interpreter(model_path=path)
    (entry,) = interpreter.get_input_details()
    interpreter.resize_tensor_input(entry["index"], images.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(entry["index"], images)
    interpreter.invoke()
    (result,) = interpreter.get_output_details()
    return interpreter.get_tensor(result["index"])


FORMATS = {"saved_model": _saved_model, "onnx": _onnx, "litert": _litert}


class ExportFormatsTest(parameterized.TestCase):
    @parameterized.named_parameters(
        (f"{name}_{form}", name, form) for name in MODELS for form in FORMATS
    )
    def test_runtime_predicts_as_keras(self, name, form):
        build, image_shape = MODELS[name]
        keras.utils.set_random_seed(0)
        model = build()
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(2, *image_shape)).astype("float32")
        want = keras.ops.convert_to_numpy(model(images))
        got = np.asarray(FORMATS[form](model, images, tempfile.mkdtemp()))
        tolerance = TOLERANCES.get(name, TOLERANCE)
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


if __name__ == "__main__":
    absltest.main()
