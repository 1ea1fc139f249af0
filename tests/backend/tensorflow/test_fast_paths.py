"""Each op that TensorFlow runs through a fast path gives the values and
gradients of its neutral form (`fast_paths.neutral_forms()`), in eager
mode, in a graph and under XLA, in float64.

The fast forms sum in other orders and form gradients from other
expressions, so they agree to rounding, not to the bit: float64's
rounding (1e-16) grown through a few routing iterations stays far below
the 1e-9 used here, and any error of a formula would be far above it.
"""

from unittest import mock

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import ops as capsule_ops
from keras_capsules.backend import tensorflow as tensorflow_paths
from keras_capsules.ops import fast_paths

_RNG = np.random.default_rng(0)


def _normal(*shape):
    return _RNG.normal(size=shape)


def _dynamic(votes):
    mask = np.ones((2, 6), bool)
    mask[1, 2:] = False
    return capsule_ops.dynamic_routing(votes, 3, mask)


def _em(votes):
    activations = np.linspace(0.1, 1.0, 2 * 6).reshape(2, 6)
    outputs = capsule_ops.em_routing(
        votes, activations, np.zeros(3), np.zeros(3), [0.5, 1.0, 2.0]
    )
    return tf.concat([tf.reshape(x, (2, -1)) for x in outputs], -1)


def _conv_em(votes):
    outputs = capsule_ops.conv_em_routing(
        votes, np.full((2, 4, 4, 2), 0.7), np.zeros(3), np.zeros(3), [1.0, 2.0]
    )
    return tf.concat([tf.reshape(x, (2, -1)) for x in outputs], -1)


def _heinsen(votes):
    scores = np.linspace(-1.0, 1.0, 2 * 6).reshape(2, 6)
    outputs = capsule_ops.heinsen_routing(scores, votes, 0.5, 0.3, 3)
    return tf.concat([tf.reshape(x, (2, -1)) for x in outputs], -1)


def _votes_with_bias(poses):
    return capsule_ops.capsule_votes(poses, _KERNEL, _BIAS)


_KERNEL, _BIAS = _normal(6, 3, 4, 2), _normal(6, 3, 2, 2)
# (name, op, its input): each op on an input it differentiates.
_CASES = (
    ("dynamic_routing_masked", _dynamic, _normal(2, 6, 3, 4)),
    ("em_routing", _em, _normal(2, 6, 3, 4)),
    ("conv_em_routing", _conv_em, _normal(2, 2, 2, 3, 3, 2, 3, 4)),
    ("heinsen_routing_narrow", _heinsen, _normal(2, 6, 3, 1, 2)),
    ("heinsen_routing_wide", _heinsen, _normal(2, 6, 3, 2, 4)),
    ("capsule_votes_with_bias", _votes_with_bias, _normal(2, 6, 2, 4)),
)


def _value_and_gradient(op, inputs, mode):
    upstream = None

    def run(inputs):
        nonlocal upstream
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs = op(inputs)
        if upstream is None:
            upstream = np.cos(np.arange(np.prod(outputs.shape))).reshape(
                outputs.shape
            )
        return outputs, tape.gradient(outputs, inputs, upstream)

    if mode != "eager":
        run = tf.function(run, jit_compile=mode == "xla")
    return run(tf.constant(inputs))


class FastPathsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.product(
        case=[case[0] for case in _CASES], mode=("eager", "graph", "xla")
    )
    def test_fast_forms_give_the_neutral_values_and_gradients(self, case, mode):
        _, op, inputs = next(c for c in _CASES if c[0] == case)
        fast = _value_and_gradient(op, inputs, mode)
        with fast_paths.neutral_forms():
            neutral = _value_and_gradient(op, inputs, mode)
        for got, want in zip(fast, neutral):
            self.assertAllClose(got, want, rtol=1e-9, atol=1e-9)

    @parameterized.named_parameters(
        (
            "routing_gradient",
            "dynamic_routing_masked",
            "routed_capsules",
            "graph",
        ),
        ("moments_gradient", "em_routing", "weighted_moments", "graph"),
        ("gradient_probes", "em_routing", "gradient_probes", "xla"),
        ("small_matmul", "heinsen_routing_wide", "small_matmul", "graph"),
        ("written_once", "conv_em_routing", "written_once", "xla"),
        ("xla_layouts", "capsule_votes_with_bias", "compiled_by_xla", "xla"),
    )
    def test_the_fast_form_runs_and_not_inside_the_neutral_forms(
        self, case, name, mode
    ):
        # What the equality above is worth: each fast form ran.
        _, op, inputs = next(c for c in _CASES if c[0] == case)
        with mock.patch.object(
            tensorflow_paths, name, wraps=getattr(tensorflow_paths, name)
        ) as fast:
            _value_and_gradient(op, inputs, mode)
            self.assertTrue(fast.called)
            fast.reset_mock()
            with fast_paths.neutral_forms():
                _value_and_gradient(op, inputs, mode)
            self.assertFalse(fast.called)


if __name__ == "__main__":
    tf.test.main()
