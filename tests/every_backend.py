"""What the tests that run on every Keras backend use where the others
use TensorFlow: a TestCase with the suite's assertions, the ways each
backend runs a function, and gradients by each backend's automatic
differentiation. The backend is Keras's (`KERAS_BACKEND`)."""

import importlib

import keras
import numpy as np
from absl.testing import parameterized

BACKEND = keras.backend.backend()
# The ways each backend runs a function: TensorFlow eagerly, as a graph
# and compiled by XLA; JAX op by op and compiled (`jax.jit`); PyTorch
# eagerly.
MODES = {
    "tensorflow": ("eager", "graph", "xla"),
    "jax": ("eager", "jit"),
    "torch": ("eager",),
}[BACKEND]
# The modes that compile with XLA.
XLA_MODES = {"xla", "jit"}


def numpy(tensors):
    """`tensors` as NumPy: a tensor or array-like as one array, a list or
    tuple of equal shapes as one array too (as `tf.test.TestCase` reads
    them), of unequal shapes as a list, a dict as a dict."""
    if isinstance(tensors, dict):
        return {key: numpy(value) for key, value in tensors.items()}
    if isinstance(tensors, (list, tuple)):
        parts = [numpy(part) for part in tensors]
        shapes = {np.shape(part) for part in parts}
        if len(shapes) == 1 and not isinstance(parts[0], (list, dict)):
            return np.stack(parts) if parts else np.asarray(parts)
        return parts
    return np.asarray(keras.ops.convert_to_numpy(tensors))


def _compare(assertion, a, b):
    """`assertion(a, b)` on each pair of arrays of `numpy(a)` and
    `numpy(b)`, which must have the same structure."""
    a, b = numpy(a), numpy(b)
    if isinstance(a, dict) or isinstance(b, dict):
        assert (
            isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
        ), (a, b)
        for key in a:
            _compare(assertion, a[key], b[key])
    elif isinstance(a, list) or isinstance(b, list):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _compare(assertion, x, y)
    else:
        assertion(a, b)


def run_in(function, mode):
    """`function`, run in `mode` (one of `MODES`)."""
    if mode == "eager":
        return function
    if BACKEND == "tensorflow":
        tf = importlib.import_module("tensorflow")
        return tf.function(function, jit_compile=mode == "xla")
    if BACKEND == "jax" and mode == "jit":
        return importlib.import_module("jax").jit(function)
    raise ValueError(f"{BACKEND} has no mode {mode!r}; it has {MODES}.")


def value_and_gradients(function, inputs, upstream=None):
    """`(outputs, gradients)`: `function(*inputs)`, a tensor or a tuple of
    them, and the gradient of `sum(outputs * upstream)` (`upstream` of the
    outputs' structure; the sum of every output's entries where it is
    None) with respect to each of `inputs`, by the backend's own automatic
    differentiation."""
    inputs = [keras.ops.convert_to_tensor(x) for x in inputs]

    def weighted(outputs):
        if upstream is None:
            return keras.tree.map_structure(keras.ops.ones_like, outputs)
        return keras.tree.map_structure(
            lambda output, weight: keras.ops.cast(weight, output.dtype),
            outputs,
            upstream,
        )

    if BACKEND == "tensorflow":
        tf = importlib.import_module("tensorflow")
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs = function(*inputs)
        return outputs, tape.gradient(outputs, inputs, weighted(outputs))
    if BACKEND == "jax":
        jax = importlib.import_module("jax")
        outputs, pullback = jax.vjp(function, *inputs)
        return outputs, list(pullback(weighted(outputs)))
    torch = importlib.import_module("torch")
    inputs = [x.detach().requires_grad_(True) for x in inputs]
    outputs = function(*inputs)
    gradients = torch.autograd.grad(
        keras.tree.flatten(outputs),
        inputs,
        keras.tree.flatten(weighted(outputs)),
        allow_unused=True,
    )
    detached = keras.tree.map_structure(lambda x: x.detach(), outputs)
    return detached, list(gradients)


def loss_gradients(loss, inputs, variables, compiled=True):
    """The gradients of the scalar `loss(*inputs)` with respect to each of
    `inputs` and then each of `variables` (Keras variables that `loss`
    reads), as NumPy arrays (zeros where `loss` does not depend on one),
    by the backend's own automatic differentiation. On JAX, `compiled`
    differentiates under `jax.jit`; otherwise op by op, each op its own
    small compiled program (minutes for an EM layer)."""
    inputs = [keras.ops.convert_to_tensor(x) for x in inputs]
    if BACKEND == "tensorflow":
        tf = importlib.import_module("tensorflow")
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            value = loss(*inputs)
        gradients = [
            None if gradient is None else tf.convert_to_tensor(gradient)
            for gradient in tape.gradient(value, [*inputs, *variables])
        ]
    elif BACKEND == "jax":
        jax = importlib.import_module("jax")

        def stateless(input_values, variable_values):
            mapping = list(zip(variables, variable_values))
            with keras.StatelessScope(state_mapping=mapping):
                return loss(*input_values)

        gradient = jax.grad(stateless, argnums=(0, 1))
        by_input, by_variable = (jax.jit(gradient) if compiled else gradient)(
            inputs, [variable.value for variable in variables]
        )
        gradients = [*by_input, *by_variable]
    else:
        inputs = [x.detach().requires_grad_(True) for x in inputs]
        sources = [*inputs, *(variable.value for variable in variables)]
        gradients = importlib.import_module("torch").autograd.grad(
            loss(*inputs), sources, allow_unused=True
        )
    return [
        np.zeros(source.shape, "float32")
        if gradient is None
        else numpy(keras.ops.cast(gradient, "float32"))
        for source, gradient in zip([*inputs, *variables], gradients)
    ]


class TestCase(parameterized.TestCase):
    """The assertions of `tf.test.TestCase` that the suite uses, with its
    default tolerances, on any backend's tensors, and its seeding: every
    test starts from one seed (Keras's, NumPy's, Python's and the
    backend's), so that weights drawn without a seed are the same in
    every run."""

    # `tf.test.TestCase`'s seed.
    SEED = 87654321

    def setUp(self):
        super().setUp()
        keras.utils.set_random_seed(self.SEED)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        _compare(
            lambda x, y: np.testing.assert_allclose(
                x, y, rtol=rtol, atol=atol, err_msg=msg or ""
            ),
            a,
            b,
        )

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol)
        except AssertionError:
            return
        raise AssertionError(msg or "The values are all close.")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        _compare(
            lambda x, y: np.testing.assert_array_equal(x, y, err_msg=msg or ""),
            a,
            b,
        )

    def assertAllInRange(self, values, low, high):  # noqa: N802
        values = numpy(values)
        self.assertTrue(np.all((values >= low) & (values <= high)), values)

    def assertDTypeEqual(self, tensor, dtype):  # noqa: N802
        self.assertEqual(keras.backend.standardize_dtype(tensor.dtype), dtype)
