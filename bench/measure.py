"""What every benchmark reports: best-of timings, peak memory, device."""

import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app

from bench.cpu import cpu_model
from examples import runtime


def best_seconds(run, repeats, warm_up=True, steps=1):
    """Runs once to trace and compile (unless `warm_up` is False), then
    returns the best of `repeats` timings of `steps` calls of `run()`,
    divided by `steps`."""
    if warm_up:
        run()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            run()
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def steps_lasting(run, min_seconds):
    """How many calls of `run()` take at least `min_seconds`, judged from
    one timed call: a timing of a few-millisecond step is mostly the
    jitter of that one call, a timing of a hundred calls is not."""
    start = time.perf_counter()
    run()
    return max(1, math.ceil(min_seconds / (time.perf_counter() - start)))


# Each timed repetition lasts at least this long (see `steps_lasting`).
MIN_REPEAT_SECONDS = 0.25


def time_step(step, batch_size, repeats):
    """The timing fields of one measurement: `batch_size`,
    `seconds_per_step` (after a compiling run, the best of `repeats`
    repetitions of `steps_per_repeat` steps, enough steps that each
    repetition lasts `MIN_REPEAT_SECONDS`), `examples_per_second`,
    `peak_memory_mb` (the peak during the timed steps, less the memory in
    use just before them: what a step needs beyond its inputs and
    weights), `page_faults_per_step` (see `page_faults`) and `device`."""
    step()  # Traces and compiles.
    steps = steps_lasting(step, MIN_REPEAT_SECONDS)
    before = memory_in_use_mb()
    reset_peak_memory()
    faults_before = page_faults()
    seconds = best_seconds(step, repeats, warm_up=False, steps=steps)
    faults = page_faults() - faults_before
    return {
        "batch_size": batch_size,
        "seconds_per_step": round(seconds, 5),
        "steps_per_repeat": steps,
        "examples_per_second": round(batch_size / seconds, 1),
        "peak_memory_mb": round(peak_memory_mb() - before),
        "page_faults_per_step": round(faults / (repeats * steps)),
        "device": device_name(),
    }


def page_faults():
    """The page faults this process has taken so far (minor ones: a page
    of memory mapped in, zeroed, on its first touch).

    A step that faults in its temporaries on every call pays for it in
    every call: where TensorFlow's CPU allocator hands large buffers back
    to the system when they are freed (its default allocator where oneDNN
    is off, unless `TF_CPU_ALLOCATOR_USE_BFC=true`), a step touches its
    memory afresh each time (research/speed.md, "The CPU allocator")."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def empty_step_seconds(inputs, mode, repeats):
    """Seconds per step of `forward_backward_step` in `mode` around a
    layer that does nothing (`keras.layers.Identity`), on the same inputs
    and timed by `time_step`: the function call, the loss, its gradient to
    the inputs and their copy to NumPy. No layer's step can take less; on
    a small step it is much of the time (Heinsen 64 -> 5 at batch 20)."""
    step = forward_backward_step(keras.layers.Identity(), inputs, mode)
    # The batch size only scales examples/s, which is not returned.
    return time_step(step, 1, repeats)["seconds_per_step"]


def record_xla_memory_plans(directory):
    """Makes XLA write into `directory` the memory plan (buffer
    assignment) of every program it compiles from now on. Takes effect
    only before the process's first XLA compilation: XLA reads its flags
    once."""
    os.environ["XLA_FLAGS"] = (
        f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={directory} "
        "--xla_dump_hlo_as_text"
    ).strip()


def xla_planned_memory_mb(directory, function_name="step"):
    """The memory, in MB, that XLA's plan in `directory` gives the largest
    compiled program of the traced function `function_name`: its
    temporaries, parameters and outputs. None where there is no plan.

    This is the memory the step needs, where `peak_memory_mb` can report
    up to twice as much: TensorFlow's allocator hands a request a whole
    free block when that block is less than twice its size, and counts
    the block (an 18.7 MB plan drawn from a free 32 MB block reads as
    32 MB).
    """
    if not os.path.isdir(directory):
        return None
    planned = []
    for file_name in os.listdir(directory):
        if f"inference_{function_name}_" in file_name and file_name.endswith(
            "memory-usage-report.txt"
        ):
            with open(os.path.join(directory, file_name)) as report:
                match = re.search(r"Total bytes used: (\d+)", report.read())
            if match:
                planned.append(int(match.group(1)) / 2**20)
    return round(max(planned), 1) if planned else None


def on_gpu():
    """Whether TensorFlow sees a GPU (and so places the work there)."""
    return bool(tf.config.list_physical_devices("GPU"))


def _allocator_device():
    return "GPU:0" if on_gpu() else "CPU:0"


def _allocator_info():
    """TensorFlow's allocator statistics of the device (bytes `current`
    and `peak`), or None where it keeps none."""
    try:
        return tf.config.experimental.get_memory_info(_allocator_device())
    except (ValueError, tf.errors.OpError):
        return None


def memory_in_use_mb():
    """The memory TensorFlow's allocator holds now on the device (GPU, or
    CPU), in MB; where it keeps no statistics (on a CPU where oneDNN is
    off), the process's resident set."""
    info = _allocator_info()
    if info is None:
        return _process_memory_kb("VmRSS") / 1024.0
    return info["current"] / 2**20


def reset_peak_memory():
    """Starts the peak that `peak_memory_mb` reports afresh (where
    TensorFlow keeps no statistics, the process's peak resident set, which
    Linux resets on writing 5 to `/proc/self/clear_refs`)."""
    if _allocator_info() is not None:
        tf.config.experimental.reset_memory_stats(_allocator_device())
        return
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass  # Not Linux: the peak then counts from the process's start.


def peak_memory_mb():
    """The peak of TensorFlow's allocator on the device since
    `reset_peak_memory` (tensors of eager, graph and XLA execution alike),
    in MB; where it keeps no statistics, the process's peak resident set
    since then, whose growth is a lower bound: memory the process already
    holds and reuses is not counted again."""
    info = _allocator_info()
    if info is None:
        return _process_memory_kb("VmHWM") / 1024.0
    return info["peak"] / 2**20


def _process_memory_kb(field):
    """`VmRSS` or `VmHWM` of this process in kB from `/proc/self/status`;
    off Linux, the peak resident set `getrusage` gives."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def device_name():
    """The GPU's name, or the CPU's core count, architecture and model
    and the oneDNN setting the process runs with: machines of one name
    differ (the same steps ran 1.6-6x slower on an AVX2-only CPU than on
    an AVX-512 one), and so does TensorFlow's choice of kernels on them."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        return details.get("device_name", "GPU")
    return (
        f"CPU, {os.cpu_count()} cores, {platform.machine()}, "
        f"{cpu_model()}, TF_ENABLE_ONEDNN_OPTS={runtime.onednn_setting()}"
    )


def run_case_in_subprocess(module, case, flags, environment=None):
    """Runs `python -m module --case=CASE *flags` in its own process, so
    that its peak memory is its own, with `environment` (a dict) added to
    this process's environment variables; returns the JSON object of the
    last line it printed, or `{"case", "error"}` with the end of its
    stderr."""
    result = subprocess.run(
        [sys.executable, "-m", module, f"--case={case}", *flags],
        capture_output=True,
        text=True,
        env={**os.environ, **(environment or {})},
    )
    lines = [line for line in result.stdout.splitlines() if line]
    if result.returncode or not lines:
        return {"case": case, "error": result.stderr[-500:]}
    return json.loads(lines[-1])


def run_cases_in_subprocesses(module, cases, flags, annotate=None):
    """`run_case_in_subprocess` of each case; prints each result (through
    `annotate(case, result)`, if given) as one JSON line."""
    for case in cases:
        result = run_case_in_subprocess(module, case, flags)
        if annotate is not None:
            result = annotate(case, result)
        print(json.dumps(result), flush=True)


def run_cases(argv, module, case, run_case, cases, flags, annotate=None):
    """The `main` of a benchmark whose cases each run in a process of
    their own: with `case` (its `--case` flag) set, prints `run_case(case)`
    as one JSON line; otherwise `run_cases_in_subprocesses(module, cases,
    flags, annotate)`, which comes back here with `--case` for each."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if case:
        print(json.dumps(run_case(case)), flush=True)
        return
    run_cases_in_subprocesses(module, cases, flags, annotate)


def _loss_gradients(layer, inputs):
    """The gradients of the sum of the squares of every output of
    `layer(inputs)` to the inputs, then to the layer's weights."""
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = tf.nest.flatten(layer(inputs))
        loss = tf.add_n([tf.reduce_sum(tf.square(o)) for o in outputs])
    return tape.gradient(
        loss, [*tf.nest.flatten(inputs), *layer.trainable_weights]
    )


def forward_backward_step(layer, inputs, mode):
    """A no-argument function running one forward and backward pass of
    `layer` on `inputs` (loss: the sum of the squares of every output;
    gradients to the inputs and the weights), in `mode`: `"eager"`,
    `"graph"` (`tf.function`) or `"xla"` (`tf.function(jit_compile=
    True)`)."""
    layer(tf.nest.map_structure(lambda x: x[:1], inputs))

    def step():
        return _loss_gradients(layer, inputs)

    if mode not in ("eager", "graph", "xla"):
        raise ValueError(
            f"Unknown mode {mode!r}. Expected 'eager', 'graph' or 'xla'."
        )
    if mode != "eager":
        step = tf.function(step, jit_compile=mode == "xla")
    # An input a layer does not use (inverted attention's logits) has no
    # gradient.
    return lambda: [g.numpy() for g in step() if g is not None]


def forward_backward_step_in_parts(layer, inputs, parts):
    """`forward_backward_step(layer, inputs, "xla")` with the batch cut
    into `parts` equal slices, each slice's forward and backward pass an
    XLA program of its own, all called from one `tf.function`: the inputs'
    gradients are the slices' joined, the weights' their sum.

    TensorFlow's XLA:CPU runs one program's operations one after another
    (only products and some elementwise loops use both cores), while
    TensorFlow's executor runs independent programs side by side, so this
    is the step with the batch spread over the cores, as data parallelism
    would spread it (research/speed.md, "One XLA program or several")."""
    batch = tf.nest.flatten(inputs)[0].shape[0]
    if parts < 1 or batch % parts:
        raise ValueError(
            f"Cannot cut a batch of {batch} into {parts} equal parts. "
            "Expected a positive number of parts that divides the batch."
        )
    layer(tf.nest.map_structure(lambda x: x[:1], inputs))

    @tf.function(jit_compile=True)
    def part_step(part_inputs):
        return _loss_gradients(layer, part_inputs)

    input_count = len(tf.nest.flatten(inputs))
    size = batch // parts

    @tf.function
    def step():
        gradients = [
            part_step(
                tf.nest.map_structure(
                    lambda x, k=k: x[k * size : (k + 1) * size], inputs
                )
            )
            for k in range(parts)
        ]
        return [
            tf.concat([g[k] for g in gradients], axis=0)
            if k < input_count
            else tf.add_n([g[k] for g in gradients])
            for k in range(len(gradients[0]))
        ]

    return lambda: [g.numpy() for g in step()]
