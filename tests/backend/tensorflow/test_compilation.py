"""`compiled_by_xla` tells the ops which compiler traces them;
`written_once` changes no value and no gradient in any mode."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules.backend.tensorflow.compilation import (
    compiled_by_xla,
    written_once,
)


class CompiledByXlaTest(tf.test.TestCase):
    def test_true_only_while_xla_traces(self):
        seen = {}

        def record(name):
            def function(x):
                seen[name] = compiled_by_xla()
                return x

            return function

        tf.function(record("xla"), jit_compile=True)(tf.ones(1))
        tf.function(record("graph"))(tf.ones(1))
        record("eager")(tf.ones(1))
        self.assertEqual(seen, {"xla": True, "graph": False, "eager": False})


class WrittenOnceTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.product(
        mode=("eager", "graph", "xla"), dtype=("float32", "float16")
    )
    def test_values_and_gradients_pass_unchanged(self, mode, dtype):
        rng = np.random.default_rng(0)
        values = rng.normal(size=(3, 4, 5)).astype(dtype)
        upstream = rng.normal(size=(4, 3, 5)).astype(dtype)

        def run(values):
            with tf.GradientTape() as tape:
                tape.watch(values)
                # Read by two consumers through a transpose: the case the
                # function is for.
                shared = written_once(tf.transpose(values, (1, 0, 2)) - 1)
                out = tf.square(shared) + 2 * shared
                loss = tf.reduce_sum(shared * upstream)
            return out, shared, tape.gradient(loss, values)

        if mode != "eager":
            run = tf.function(run, jit_compile=mode == "xla")
        out, shared, gradient = run(tf.constant(values))
        want = np.transpose(values, (1, 0, 2)) - np.asarray(1, dtype)
        self.assertAllEqual(shared, want)  # bit for bit: x / 1 = x
        # `x**2 + 2 x` rounds twice (square, sum; once where a compiler
        # fuses them), each time by at most half an ulp of its result:
        # within `eps (x**2 + 2 |x|)` of the exact value. Relative to the
        # sum this is unbounded where the two terms cancel (x near -2),
        # and float16 kernels differ between CPUs in whether they fuse.
        exact = want.astype("float64")
        terms = exact**2 + 2 * np.abs(exact)
        error = np.abs(np.asarray(out, "float64") - (exact**2 + 2 * exact))
        self.assertAllLessEqual(error - np.finfo(dtype).eps * terms, 0.0)
        self.assertAllEqual(gradient, np.transpose(upstream, (1, 0, 2)))

    def test_an_empty_batch_passes_under_xla(self):
        out = tf.function(written_once, jit_compile=True)(tf.zeros((0, 3)))
        self.assertEqual(out.shape, (0, 3))

    @parameterized.named_parameters(("nan", np.nan), ("inf", np.inf))
    def test_a_non_finite_entry_stays_where_it_is(self, bad):
        values = np.arange(6, dtype="float32").reshape(2, 3)
        values[0, 0] = bad
        out = tf.function(written_once, jit_compile=True)(values)
        self.assertAllEqual(out[0, 1:], values[0, 1:])
        self.assertAllEqual(out[1], values[1])
        self.assertEqual(np.isnan(out[0, 0]), np.isnan(bad))


if __name__ == "__main__":
    tf.test.main()
