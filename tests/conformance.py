"""Shared checks every public layer passes (DESIGN.md section 8)."""

import dataclasses
import importlib
import os
import tempfile

import keras
import numpy as np
from keras import ops

from tests.every_backend import BACKEND, loss_gradients, run_in


@dataclasses.dataclass
class LayerCase:
    """One layer under test: class, constructor arguments, input shape.

    `input_shape` is one shape without the batch axis, or a list of them
    for a layer with several inputs (given to it as a list).
    """

    cls: type
    init_kwargs: dict
    input_shape: tuple | list
    name: str = ""
    # Indices of inputs drawn uniform in [0, 1] (probabilities, such as
    # capsule activations) instead of standard normal.
    probability_inputs: tuple = ()
    # Tolerance (relative and absolute) between compiled (XLA, SavedModel)
    # and eager results. Iterative routing carries float32 rounding (graphs
    # sum in another order) through several E- and M-steps; EM layers get
    # 1e-4.
    graph_tolerance: float | None = None
    # `extra_loss(layer, inputs, outputs) -> scalar`, added to the loss of
    # the gradient checks, for layers with weights that `call` does not
    # use (a decoder whose other parameters serve its distributions).
    extra_loss: object = None
    # Shape, without the batch axis, of the bool capsule mask the layer
    # takes (`call(inputs, mask=...)`); None for a layer without masks.
    mask_shape: tuple | None = None
    # The Keras backends the layer runs on (one built on TensorFlow
    # Probability runs on TensorFlow only).
    backends: tuple = ("tensorflow", "jax", "torch")
    # False for a layer built on Keras's MultiHeadAttention: it asks for
    # float32 sums of float16 products, which XLA:CPU refuses under
    # `jax.jit` (JAX 0.10, Keras 3.15; GPUs compute them). Its float16
    # gradients on JAX are then taken op by op.
    float16_compiles_on_jax_cpu: bool = True

    def gradient_loss(self, layer, inputs, outputs):
        """The loss whose gradients the checks require to be finite."""
        loss = _log_magnitude_loss(outputs)
        if self.extra_loss is not None:
            loss += ops.cast(
                self.extra_loss(layer, inputs, outputs), loss.dtype
            )
        return loss

    def graph_tolerances(self, rtol, atol):
        """`(rtol, atol)`: the given defaults, or `graph_tolerance`."""
        if self.graph_tolerance is None:
            return {"rtol": rtol, "atol": atol}
        return {"rtol": self.graph_tolerance, "atol": self.graph_tolerance}

    @property
    def input_shapes(self):
        """The shapes of the inputs, as a list."""
        if isinstance(self.input_shape, list):
            return self.input_shape
        return [self.input_shape]

    def _pack(self, values):
        return values if isinstance(self.input_shape, list) else values[0]

    def make_inputs(self, batch=3, seed=0):
        rng = np.random.default_rng(seed)
        return self._pack(
            [
                (
                    rng.uniform(size=(batch, *shape))
                    if index in self.probability_inputs
                    else rng.normal(size=(batch, *shape))
                ).astype("float32")
                for index, shape in enumerate(self.input_shapes)
            ]
        )

    def zero_inputs(self, batch=2):
        return self._pack(
            [
                np.zeros((batch, *shape), "float32")
                for shape in self.input_shapes
            ]
        )

    def input_specs(self):
        tf = importlib.import_module("tensorflow")
        return self._pack(
            [tf.TensorSpec((None, *shape)) for shape in self.input_shapes]
        )

    def batch_shape(self):
        return self._pack([(None, *shape) for shape in self.input_shapes])

    def make_model(self):
        inputs = self._pack([keras.Input(shape) for shape in self.input_shapes])
        outputs = self.cls(**self.init_kwargs)(inputs)
        return keras.Model(inputs, outputs)


def _log_magnitude_loss(outputs):
    """A loss whose gradient reaches every output element."""
    return sum(
        ops.sum(ops.log(ops.abs(ops.cast(o, "float32")) + 1e-3))
        for o in keras.tree.flatten(outputs)
    )


def assert_all_close(test, got, want, **tolerances):
    """Compares every output of a layer (outputs of different shapes too)."""
    got, want = keras.tree.flatten(got), keras.tree.flatten(want)
    test.assertLen(got, len(want))
    for got_output, want_output in zip(got, want):
        test.assertAllClose(got_output, want_output, **tolerances)


def _first(outputs):
    return keras.tree.flatten(outputs)[0]


def check_output_shape(test, case):
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs()
    outputs = layer(x)
    expected = layer.compute_output_shape(case.batch_shape())
    if isinstance(outputs, (list, tuple)):
        test.assertLen(expected, len(outputs))
    else:
        outputs, expected = [outputs], [expected]
    for output, shape in zip(outputs, expected):
        test.assertEqual(tuple(output.shape[1:]), tuple(shape[1:]))


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
    if BACKEND != "tensorflow":
        test.skipTest("SavedModel export traces with TensorFlow.")
    tf = importlib.import_module("tensorflow")
    model = case.make_model()
    x = case.make_inputs()
    path = os.path.join(tempfile.mkdtemp(), "export")
    model.export(path)
    served = tf.saved_model.load(path)
    assert_all_close(
        test,
        served.serve(tf.nest.map_structure(tf.constant, x)),
        model(x),
        **case.graph_tolerances(1e-5, 1e-6),
    )


def check_xla_matches_eager(test, case):
    """Compiled by XLA (TensorFlow's `jit_compile`, `jax.jit`) as eager."""
    modes = {"tensorflow": "xla", "jax": "jit"}
    if BACKEND not in modes:
        test.skipTest(f"{BACKEND} does not compile with XLA.")
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs()
    eager = layer(x)
    compiled = run_in(layer, modes[BACKEND])(x)
    assert_all_close(test, compiled, eager, **case.graph_tolerances(1e-5, 1e-6))


def _gradients(case, layer, x, compiled=True):
    """`(outputs, gradients)`: the layer's outputs at `x` and the gradients
    of `case.gradient_loss` with respect to `x` and the trainable weights
    (`compiled` as in `loss_gradients`)."""
    x = keras.tree.map_structure(ops.convert_to_tensor, x)

    def loss(*inputs):
        inputs = keras.tree.pack_sequence_as(x, inputs)
        return case.gradient_loss(layer, inputs, layer(inputs))

    gradients = loss_gradients(
        loss, keras.tree.flatten(x), layer.trainable_weights, compiled
    )
    return layer(x), gradients


def check_zero_input_gradients(test, case):
    layer = case.cls(**case.init_kwargs)
    x = case.zero_inputs()
    layer(x)
    _, gradients = _gradients(case, layer, x)
    for gradient in gradients:
        test.assertTrue(np.all(np.isfinite(gradient)))


def check_unknown_batch_size(test, case):
    """One function for every batch size: a `tf.function` of an unknown
    batch size on TensorFlow, a functional model on every backend."""
    if BACKEND == "tensorflow":
        tf = importlib.import_module("tensorflow")
        layer = case.cls(**case.init_kwargs)
        function = tf.function(layer, input_signature=[case.input_specs()])
    else:
        function = case.make_model()
    for batch in (1, 5):
        outputs = function(case.make_inputs(batch))
        test.assertEqual(_first(outputs).shape[0], batch)


def check_mixed_precision(test, case):
    """Half-precision outputs, float32 weights, finite gradients."""
    policy = keras.mixed_precision.dtype_policy()
    for name, dtype in (
        ("mixed_float16", "float16"),
        ("mixed_bfloat16", "bfloat16"),
    ):
        keras.mixed_precision.set_dtype_policy(name)
        try:
            layer = case.cls(**case.init_kwargs)
            x = case.make_inputs()
            layer(x)
            compiled = dtype != "float16" or case.float16_compiles_on_jax_cpu
            outputs, gradients = _gradients(case, layer, x, compiled)
            for output in keras.tree.flatten(outputs):
                test.assertEqual(
                    keras.backend.standardize_dtype(output.dtype), dtype
                )
                test.assertTrue(
                    np.all(
                        np.isfinite(
                            ops.convert_to_numpy(ops.cast(output, "float32"))
                        )
                    )
                )
            for weight in layer.trainable_weights:
                test.assertEqual(weight.dtype, "float32")
            for gradient in gradients[len(keras.tree.flatten(x)) :]:
                test.assertTrue(np.all(np.isfinite(gradient)))
        finally:
            keras.mixed_precision.set_dtype_policy(policy)


def check_config_round_trip(test, case):
    """`from_config(get_config())` gives the same layer, without saving."""
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs()
    outputs = layer(x)
    clone = case.cls.from_config(layer.get_config())
    clone(x)
    clone.set_weights(layer.get_weights())
    test.assertEqual(clone.get_config(), layer.get_config())
    assert_all_close(test, clone(x), outputs, rtol=1e-6, atol=1e-7)


def _perturb_capsule(case, x, index, seed):
    """`x` with new values for the capsule at `index` (a position of the
    mask) in every input whose leading axes are the mask's."""
    rng = np.random.default_rng(seed)
    perturbed = []
    for input_index, (value, shape) in enumerate(
        zip(keras.tree.flatten(x), case.input_shapes)
    ):
        value = np.array(value)
        if tuple(shape[: len(case.mask_shape)]) == tuple(case.mask_shape):
            position = (slice(None), *index)
            change = rng.uniform(0.2, 0.8, size=value[position].shape)
            if input_index in case.probability_inputs:
                # A probability stays in [0, 1]: move it away from itself.
                value[position] = np.where(
                    value[position] > 0.5,
                    value[position] - change / 2,
                    value[position] + change / 2,
                )
            else:
                value[position] += change.astype(value.dtype)
        perturbed.append(value)
    return case._pack(perturbed)


def _kept_outputs(layer, x, mask):
    """The outputs at the positions their Keras masks keep."""
    outputs = keras.tree.flatten(layer(x, mask=mask))
    output_masks = layer.compute_mask(x, mask)
    if not isinstance(output_masks, (list, tuple)):
        output_masks = [output_masks] * len(outputs)
    return [
        ops.convert_to_numpy(output)
        if output_mask is None
        else ops.convert_to_numpy(output)[ops.convert_to_numpy(output_mask)]
        for output, output_mask in zip(outputs, output_masks)
    ]


def check_masked_capsule_changes_nothing(test, case):
    """A capsule the mask leaves out changes no output; one it keeps does."""
    if case.mask_shape is None:
        return
    layer = case.cls(**case.init_kwargs)
    x = case.make_inputs(batch=2)
    mask = np.ones((2, *case.mask_shape), bool)
    left_out = (1,) + (0,) * (len(case.mask_shape) - 1)
    mask[(slice(None), *left_out)] = False
    mask = ops.convert_to_tensor(mask)
    outputs = _kept_outputs(layer, x, mask)
    padded = _kept_outputs(layer, _perturb_capsule(case, x, left_out, 1), mask)
    for got, want in zip(padded, outputs):
        test.assertAllClose(got, want, rtol=1e-5, atol=1e-6)
    kept = (0,) * len(case.mask_shape)
    changed = _kept_outputs(layer, _perturb_capsule(case, x, kept, 1), mask)
    test.assertFalse(
        all(
            np.allclose(got, want, rtol=1e-5, atol=1e-6)
            for got, want in zip(changed, outputs)
        )
    )


CHECKS = {
    "output_shape": check_output_shape,
    "keras_round_trip": check_keras_round_trip,
    "saved_model_export": check_saved_model_export,
    "xla": check_xla_matches_eager,
    "zero_input_gradients": check_zero_input_gradients,
    "unknown_batch_size": check_unknown_batch_size,
    "mixed_precision": check_mixed_precision,
    "config_round_trip": check_config_round_trip,
    "masked_capsule": check_masked_capsule_changes_nothing,
}
