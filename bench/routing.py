"""Every routing layer at DESIGN.md's shapes (section 9), forward plus
backward, in eager, `tf.function` (`graph`) and XLA modes, against the
machine's own limits measured in the same run (`bench.machine`).

Each measurement runs in its own subprocess (its peak memory is its
own). Every line carries, besides `bench.measure.time_step`'s fields:

```none
flops_per_example     3 x the forward work the algorithm needs (the
                      backward pass is twice the forward): the votes,
                      2 n_in n_out d_in d_out (x d_cov for Heinsen, x 4 for
                      4x4 poses), and per routing iteration `passes`
                      multiply-adds over the vote tensor's elements
                      (dynamic routing: the weighted sum and the
                      agreement, 2; Heinsen and EM: a log-likelihood, a
                      mean and a second moment, 3)
compute_bound         examples/s at the machine's matmul rate
percent_of_bound      examples/s as a percentage of compute_bound
vote_mb               the vote tensor of the batch, float32
vote_passes           step time x copy bandwidth / vote bytes: how many
                      vote-sized reads and writes the step's time would
                      allow (the algorithm itself needs none)
```

`empty_step_seconds` is the same step around a layer that does nothing
(`bench.measure.empty_step_seconds`): the part of `seconds_per_step` that
no routing layer can save.

Under XLA, `xla_planned_mb` is the memory XLA's plan gives the step
(temporaries, inputs, weights and outputs): `peak_memory_mb` counts
whole allocator blocks and can read up to twice that
(`bench.measure.xla_planned_memory_mb`).

With `--parts=N` (N > 1) the XLA step cuts the batch into N slices,
each slice's forward and backward pass an XLA program of its own, which
TensorFlow runs side by side (`bench.measure.forward_backward_step_in_
parts`; the layer's step as `recipes.BatchPartsModel` trains it); the
lines then carry `parts`.

The first line is the machine's (`matmul_gflops`, `copy_gb_per_s`).
Measures; never asserts.

Usage: python -m bench.routing [--repeats=3] [--modes=eager,graph,xla]
    [--shapes=...] [--parts=1]
"""

import json
import tempfile

import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import machine, measure
from bench.routing_shapes import SHAPES

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_MODES = flags.DEFINE_list("modes", ["eager", "graph", "xla"], "Modes to run.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`shape:mode`) in this process."
)


_SHAPE_NAMES = flags.DEFINE_list("shapes", list(SHAPES), "Shapes to run.")
_PARTS = flags.DEFINE_integer(
    "parts",
    1,
    "Under XLA, the batch cut into this many programs run side by side.",
)


def flops_per_example(shape):
    """3 x the forward work the algorithm needs (see the docstring)."""
    forward = 2 * shape["vote_macs"] + (
        2 * shape["iterations"] * shape["passes"] * shape["vote_elements"]
    )
    return 3 * forward


def run_case(case):
    name, mode = case.split(":")
    shape = SHAPES[name]
    rng = np.random.default_rng(0)
    inputs = tf.nest.map_structure(
        lambda array: tf.constant(array, tf.float32), shape["inputs"](rng)
    )
    with tempfile.TemporaryDirectory() as plans:
        if mode == "xla":
            measure.record_xla_memory_plans(plans)
        if mode == "xla" and _PARTS.value > 1:
            step = measure.forward_backward_step_in_parts(
                shape["layer"](), inputs, _PARTS.value
            )
        else:
            step = measure.forward_backward_step(shape["layer"](), inputs, mode)
        timing = measure.time_step(step, shape["batch"], _REPEATS.value)
        if mode == "xla":
            timing["xla_planned_mb"] = measure.xla_planned_memory_mb(plans)
        timing["empty_step_seconds"] = measure.empty_step_seconds(
            inputs, mode, _REPEATS.value
        )
    if mode == "xla" and _PARTS.value > 1:
        timing["parts"] = _PARTS.value
    return {"name": f"routing_{name}", "mode": mode, **timing}


def with_bounds(result, name, limits):
    """`result` with the fields that relate it to the machine's limits."""
    if "error" in result:
        return result
    shape = SHAPES[name]
    flops = flops_per_example(shape)
    bound = limits["matmul_gflops"] * 1e9 / flops
    vote_bytes = 4 * shape["vote_elements"] * shape["batch"]
    traffic = result["seconds_per_step"] * limits["copy_gb_per_s"] * 1e9
    return {
        **result,
        "flops_per_example": flops,
        "compute_bound": round(bound, 1),
        "percent_of_bound": round(
            100 * result["examples_per_second"] / bound, 2
        ),
        "vote_mb": round(vote_bytes / 2**20, 1),
        "vote_passes": round(traffic / vote_bytes, 1),
    }


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    limits = None
    if not _CASE.value:
        limits = machine.limits()
        print(json.dumps({"name": "machine", **limits}), flush=True)
    measure.run_cases(
        argv,
        "bench.routing",
        _CASE.value,
        run_case,
        [
            f"{name}:{mode}"
            for name in _SHAPE_NAMES.value
            for mode in _MODES.value
        ],
        [f"--repeats={_REPEATS.value}", f"--parts={_PARTS.value}"],
        annotate=lambda case, result: with_bounds(
            result, case.split(":")[0], limits
        ),
    )


if __name__ == "__main__":
    app.run(main)
