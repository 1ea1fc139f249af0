"""Checks that every routing op of the families added since 2019 passes:
masked inputs change nothing, gradients are finite at the hard points,
compiled runs match eager ones. Each op is called as `route(votes, mask,
*per_input)`, where each of `per_input` has the input capsules on axis 1.
"""

import keras
import numpy as np

from tests.every_backend import MODES, numpy, run_in, value_and_gradients

# Votes at the hard points of every family: all zero, all identical (zero
# spread around each parent), and saturating (every agreement or
# likelihood far out in its softmax's tail).
HARD_VOTES = {
    "zero_votes": lambda shape: np.zeros(shape),
    "identical_votes": lambda shape: np.ones(shape),
    "saturated": lambda shape: (
        np.random.default_rng(7).normal(size=shape) * 1e2
    ),
}
# A mask that leaves one input capsule in each example.
ONE_UNMASKED = np.array([[0, 0, 1, 0], [1, 0, 0, 0]], bool)


def random(shape, seed, scale=1.0):
    return np.random.default_rng(seed).normal(size=shape) * scale


def assert_masked_inputs_change_nothing(test, route, votes, *per_input):
    """Masked inputs give what routing without them gives, and garbage in
    them changes nothing."""
    mask = np.array([[1, 0, 1, 1, 0, 1], [1, 1, 0, 0, 0, 1]], bool)
    assert votes.shape[:2] == mask.shape, votes.shape
    routed = numpy(route(votes, mask, *per_input))
    for k in range(len(mask)):
        kept = [x[k : k + 1, mask[k]] for x in (votes, *per_input)]
        dropped = numpy(route(kept[0], None, *kept[1:]))
        _assert_example(test, routed, dropped, k)
    garbage = [
        np.where(np.reshape(mask, mask.shape + (1,) * (x.ndim - 2)), x, 1e3)
        for x in (votes, *per_input)
    ]
    test.assertAllClose(
        route(garbage[0], mask, *garbage[1:]), routed, atol=1e-10, rtol=1e-10
    )


def _assert_example(test, routed, dropped, k):
    """Example `k` of `routed` (a tensor or a tuple) equals `dropped`'s
    only example."""
    if isinstance(routed, list):
        for full, alone in zip(routed, dropped):
            test.assertAllClose(full[k], alone[0], atol=1e-10, rtol=1e-10)
    else:
        test.assertAllClose(routed[k], dropped[0], atol=1e-10, rtol=1e-10)


def assert_finite_at_hard_points(test, route, shape, *per_input):
    """Finite outputs and gradients (with respect to the votes) in float32
    and float64 at each of `HARD_VOTES`, and with one input left by the
    mask."""
    cases = [(make(shape), None) for make in HARD_VOTES.values()]
    cases.append((random(shape, seed=3), ONE_UNMASKED))
    for votes, mask in cases:
        for dtype in ("float32", "float64"):
            extra = [x.astype(dtype) for x in per_input]
            outputs = route(votes.astype(dtype), mask, *extra)
            for output in keras.tree.flatten(outputs):
                test.assertTrue(np.all(np.isfinite(numpy(output))))
            # The gradient of the sum of every output (some outputs, as
            # self-routing's logits, do not depend on the votes).
            _, (gradient,) = value_and_gradients(
                _summed(route, mask, extra), [votes.astype(dtype)]
            )
            test.assertTrue(np.all(np.isfinite(numpy(gradient))))


def _summed(route, mask, per_input):
    """The sum of every output of `route` as a function of the votes."""

    def total(votes):
        outputs = keras.tree.flatten(route(votes, mask, *per_input))
        return sum(keras.ops.sum(x) for x in outputs)

    return total


def assert_compiled_matches_eager(test, route, votes, *per_input):
    """Every mode of the backend (graph, XLA, jit) matches eager, float32."""
    inputs = [x.astype("float32") for x in (votes, *per_input)]
    eager = route(inputs[0], None, *inputs[1:])
    for mode in MODES:
        compiled = run_in(lambda *x: route(x[0], None, *x[1:]), mode)(*inputs)
        test.assertAllClose(compiled, eager, atol=1e-5, rtol=1e-5)
