"""Benchmarks the HeinsenRouting layer, forward plus backward, eager and
XLA, at the issue's shapes:

- `fixed_64_to_5`: 64 capsules of 4x4 -> 5 of 4x4, weights per input
  (the smallNORB model's class capsules), batch 20 and 128;
- `variable_9216_to_64`: 9216 capsules of 4x4 (64 parts on a 12x12 grid)
  -> 64 of 4x4, shared weights (routing 1 of the smallNORB model), batch 20;
- `variable_740_to_64`: 740 capsules of 1x64 (20 tokens x 37 GPT-2 layers)
  -> 64 of 1x2, shared weights (routing 1 of the SST model), batch 20.

Prints one JSON object per measurement, each from its own subprocess so
that its peak memory is its own (`peak_memory_mb`: peak less the memory
just before the measured work). Measures; never asserts.

Usage: python -m bench.heinsen_routing [--repeats=3]
"""

import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import layers

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`shape:batch:mode`) in this process."
)

# name: (n_in, d_cov, d_in, n_out, d_out, share_weights)
_SHAPES = {
    "fixed_64_to_5": (64, 4, 4, 5, 4, False),
    "variable_9216_to_64": (9216, 4, 4, 64, 4, True),
    "variable_740_to_64": (740, 1, 64, 64, 2, True),
}
_CASES = [
    f"{shape}:{batch}:{mode}"
    for shape, batches in (
        ("fixed_64_to_5", (20, 128)),
        ("variable_9216_to_64", (20,)),
        ("variable_740_to_64", (20,)),
    )
    for batch in batches
    for mode in ("eager", "xla")
]


def _step_function(shape_name, batch, mode):
    """A no-argument function running one forward+backward pass."""
    n_in, d_cov, d_in, n_out, d_out, share_weights = _SHAPES[shape_name]
    rng = np.random.default_rng(0)
    scores = tf.constant(rng.normal(size=(batch, n_in)), tf.float32)
    capsules = tf.constant(
        rng.normal(size=(batch, n_in, d_cov, d_in)), tf.float32
    )
    layer = layers.HeinsenRouting(n_out, d_out, share_weights=share_weights)
    layer([scores[:1], capsules[:1]])

    def step():
        with tf.GradientTape() as tape:
            tape.watch([scores, capsules])
            output_scores, means = layer([scores, capsules])
            loss = tf.reduce_sum(output_scores) + tf.reduce_sum(
                tf.square(means)
            )
        return tape.gradient(loss, [scores, capsules, *layer.trainable_weights])

    if mode == "xla":
        step = tf.function(step, jit_compile=True)
    return lambda: [g.numpy() for g in step()]


def run_case(case):
    shape_name, batch, mode = case.split(":")
    batch = int(batch)
    step = _step_function(shape_name, batch, mode)
    timing = measure.time_step(step, batch, _REPEATS.value)
    n_in, d_cov, d_in, n_out, d_out, share_weights = _SHAPES[shape_name]
    return {
        "name": f"heinsen_routing_{shape_name}_forward_backward",
        "mode": mode,
        "shape": {
            "n_in": n_in,
            "d_cov": d_cov,
            "d_in": d_in,
            "n_out": n_out,
            "d_out": d_out,
            "share_weights": share_weights,
        },
        **timing,
    }


def main(argv):
    measure.run_cases(
        argv,
        "bench.heinsen_routing",
        _CASE.value,
        run_case,
        _CASES,
        [f"--repeats={_REPEATS.value}"],
    )


if __name__ == "__main__":
    app.run(main)
