"""Shared checks every public layer passes (DESIGN.md section 8)."""

import dataclasses
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf


@dataclasses.dataclass
class LayerCase:
    """One layer under test: class, constructor arguments, input shape."""

    cls: type
    init_kwargs: dict
    input_shape: tuple  # Without the batch axis.
    name: str = ""

    def make_inputs(self, batch=3, seed=0):
        rng = np.random.default_rng(seed)
        return rng.normal(size=(batch, *self.input_shape)).astype("float32")

    def make_model(self):
        inputs = keras.Input(self.input_shape)
        outputs = self.cls(**self.init_kwargs)(inputs)
        return keras.Model(inputs, outputs)


def check_output_shape(test, case):
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs()
    outputs = layer(x)
    expected = layer.compute_output_shape((None, *case.input_shape))
    test.assertEqual(tuple(outputs.shape[1:]), tuple(expected[1:]))


def check_keras_round_trip(test, case):
    model = case.make_model()
    x = case.make_inputs()
    path = os.path.join(tempfile.mkdtemp(), "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    test.assertAllClose(restored(x), model(x), rtol=1e-6, atol=1e-7)
    test.assertEqual(
        restored.layers[-1].get_config(), model.layers[-1].get_config()
    )


def check_saved_model_export(test, case):
    model = case.make_model()
    x = case.make_inputs()
    path = os.path.join(tempfile.mkdtemp(), "export")
    model.export(path)
    served = tf.saved_model.load(path)
    test.assertAllClose(
        served.serve(tf.constant(x)), model(x), rtol=1e-5, atol=1e-6
    )


def check_xla_matches_eager(test, case):
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs()
    eager = layer(x)
    compiled = tf.function(layer, jit_compile=True)(x)
    test.assertAllClose(compiled, eager, rtol=1e-5, atol=1e-6)


def check_zero_input_gradients(test, case):
    layer = case.cls(**case.init_kwargs)
    x = tf.zeros((2, *case.input_shape))
    layer(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.math.log(tf.abs(layer(x)) + 1e-3))
    gradients = tape.gradient(loss, [x, *layer.trainable_weights])
    for gradient in gradients:
        test.assertTrue(np.all(np.isfinite(tf.convert_to_tensor(gradient))))


def check_unknown_batch_size(test, case):
    layer = case.cls(**case.init_kwargs)
    function = tf.function(
        layer, input_signature=[tf.TensorSpec((None, *case.input_shape))]
    )
    for batch in (1, 5):
        test.assertEqual(function(case.make_inputs(batch)).shape[0], batch)


def check_mixed_precision(test, case):
    """Half-precision outputs, float32 weights, finite gradients."""
    policy = keras.mixed_precision.dtype_policy()
    for name, dtype in (
        ("mixed_float16", tf.float16),
        ("mixed_bfloat16", tf.bfloat16),
    ):
        keras.mixed_precision.set_dtype_policy(name)
        try:
            layer = case.cls(**case.init_kwargs)
            inputs = tf.constant(case.make_inputs())
            with tf.GradientTape() as tape:
                outputs = layer(inputs)
                outputs32 = tf.cast(outputs, "float32")
                loss = tf.reduce_sum(tf.math.log(tf.abs(outputs32) + 1e-3))
            test.assertEqual(outputs.dtype, dtype)
            test.assertTrue(np.all(np.isfinite(tf.cast(outputs, "float32"))))
            for weight in layer.trainable_weights:
                test.assertEqual(weight.dtype, tf.float32)
            for gradient in tape.gradient(loss, layer.trainable_weights):
                test.assertTrue(np.all(np.isfinite(gradient.numpy())))
        finally:
            keras.mixed_precision.set_dtype_policy(policy)


CHECKS = {
    "output_shape": check_output_shape,
    "keras_round_trip": check_keras_round_trip,
    "saved_model_export": check_saved_model_export,
    "xla": check_xla_matches_eager,
    "zero_input_gradients": check_zero_input_gradients,
    "unknown_batch_size": check_unknown_batch_size,
    "mixed_precision": check_mixed_precision,
}
