"""TensorFlow's `small_matmul`: the product and its gradient, in every
mode and dtype, and the kernel it asks TensorFlow for."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules.backend.tensorflow.small_matmul import small_matmul


def _case(dtype):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 2, 4, 5))
    b = rng.normal(size=(3, 2, 5, 6))
    upstream = rng.normal(size=(3, 2, 4, 6))
    return a, b, upstream, [tf.constant(x, dtype) for x in (a, b, upstream)]


def _product_and_gradients(a, b, upstream):
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        product = small_matmul(a, b)
    return [product, *tape.gradient(product, [a, b], upstream)]


class SmallMatmulTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.product(
        mode=["eager", "graph", "xla"],
        dtype=["float64", "float32", "float16"],
    )
    def test_product_and_gradients_match_numpy(self, mode, dtype):
        a, b, upstream, tensors = _case(dtype)
        run = _product_and_gradients
        if mode != "eager":
            run = tf.function(run, jit_compile=mode == "xla")
        product, d_a, d_b = run(*tensors)
        # d(sum(g * a b)) / da = g b^T, / db = a^T g.
        factors = [
            (a, b),
            (upstream, np.swapaxes(b, -1, -2)),
            (np.swapaxes(a, -1, -2), upstream),
        ]
        eps = np.finfo(dtype).eps
        for result, (left, right) in zip([product, d_a, d_b], factors):
            self.assertEqual(result.dtype, tf.as_dtype(dtype))
            # Each factor is rounded to the dtype (half an ulp), and a sum
            # of k products rounds at most k times: the error is within
            # (k + 2) eps sum_k |left| |right| of the exact product.
            bound = (left.shape[-1] + 2) * eps * (np.abs(left) @ np.abs(right))
            error = np.abs(np.asarray(result, "float64") - left @ right)
            self.assertAllLessEqual(error - bound, 0.0)

    def test_outside_xla_the_product_is_not_handed_to_onednn(self):
        # oneDNN takes over BatchMatMulV2 (what `ops.matmul` makes), not
        # BatchMatMulV3, forward or backward.
        _, _, _, tensors = _case("float32")
        graph = (
            tf.function(_product_and_gradients)
            .get_concrete_function(*tensors)
            .graph
        )
        types = {op.type for op in graph.get_operations()}
        self.assertIn("BatchMatMulV3", types)
        self.assertNotIn("BatchMatMulV2", types)


if __name__ == "__main__":
    tf.test.main()
