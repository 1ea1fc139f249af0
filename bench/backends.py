"""Every routing layer's training step on TensorFlow (compiled by XLA),
JAX (`jax.jit`) and PyTorch (eager), side by side in one run on one
machine, at the routing benchmark's shapes (`bench.routing_shapes`).

The step is Keras's own: `train_on_batch` of a model of the one layer,
the squared outputs as its loss, plain SGD, compiled as each backend
compiles (`jit_compile=True` on TensorFlow and JAX, `False` on PyTorch,
whose `torch.compile` Keras does not use by default). Each case runs in
a process of its own, with the interpreter of its backend's environment
(`--pythons`, as `make bench-backends` sets them), so that its peak
resident memory (`peak_rss_mb`, the process's, frameworks included) is
its own; `baseline_rss_mb` is the same process's before the model is
built. Measures; never asserts.

With `--neutral`, TensorFlow runs each shape a second time with the
ops' neutral forms (no hand-written gradients or other fast paths):
what JAX and PyTorch compute, compiled by XLA through TensorFlow.

Usage: python -m bench.backends --pythons=tensorflow=PATH,jax=PATH,...
    [--shapes=...] [--repeats=3] [--neutral]
"""

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

from bench.cpu import cpu_model

_PYTHONS = flags.DEFINE_list(
    "pythons", [], "backend=interpreter, one per backend to time."
)
_SHAPES = flags.DEFINE_list("shapes", None, "Shapes to run (default: all).")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_CASE = flags.DEFINE_string("case", None, "One shape, in this process.")
_NEUTRAL = flags.DEFINE_bool(
    "neutral",
    False,
    "TensorFlow's step with the ops' neutral forms (`ops.fast_paths."
    "neutral_forms`): what JAX and PyTorch run, compiled by TensorFlow.",
)
# Timed steps per repetition: at least this long.
_MIN_SECONDS = 1.0


def _peak_rss_mb():
    """This process's peak resident memory (`VmHWM`; `ru_maxrss` would
    carry the parent's over `exec`)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _squares(y_true, y_pred):
    import keras

    return keras.ops.mean(keras.ops.square(y_pred))


def run_case(name):
    """Times the training step of shape `name` on Keras's backend."""
    from bench.routing_shapes import SHAPES

    shape = SHAPES[name]
    if _NEUTRAL.value:
        from keras_capsules.ops import fast_paths

        with fast_paths.neutral_forms():
            return {**_time(shape, name), "forms": "neutral"}
    return _time(shape, name)


def _time(shape, name):
    """The timing record of `shape`'s training step."""
    import keras

    baseline = _peak_rss_mb()
    rng = np.random.default_rng(0)
    inputs = [x.astype("float32") for x in shape["inputs"](rng)]
    symbolic = [keras.Input(x.shape[1:]) for x in inputs]
    model = keras.Model(symbolic, shape["layer"]()(symbolic))
    backend = keras.backend.backend()
    model.compile(
        optimizer=keras.optimizers.SGD(1e-3),
        loss=_squares,
        jit_compile=backend != "torch",
    )
    targets = [np.zeros(output.shape, "float32") for output in model(inputs)]
    started = time.perf_counter()
    model.train_on_batch(inputs, targets)  # traces and compiles
    first_step = time.perf_counter() - started
    best = best_seconds_per_step(lambda: model.train_on_batch(inputs, targets))
    return {
        "name": f"backends_{name}",
        "backend": backend,
        "keras": keras.__version__,
        "seconds_per_step": round(best, 6),
        "examples_per_second": round(shape["batch"] / best, 1),
        "first_step_seconds": round(first_step, 2),
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "device": device_name(backend),
        **onednn_setting(backend),
    }


def best_seconds_per_step(run):
    """The best of `--repeats` timings of `run` after one warm-up step,
    each repetition at least `_MIN_SECONDS` and as many steps as the one
    before."""
    run()
    steps, best = 1, float("inf")
    for _ in range(_REPEATS.value):
        started = time.perf_counter()
        done = 0
        while True:
            run()
            done += 1
            elapsed = time.perf_counter() - started
            if done >= steps and elapsed >= _MIN_SECONDS:
                break
        steps = done
        best = min(best, elapsed / done)
    return best


def device_name(backend):
    """The accelerator Keras runs on (JAX's or PyTorch's GPU), else the
    CPU and its cores."""
    if backend == "jax":
        import jax  # noqa: PLC0415

        device = jax.devices()[0]
        if device.platform != "cpu":
            return device.device_kind
    if backend == "torch":
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    return f"{cpu_model()}, {os.cpu_count()} cores"


def onednn_setting(backend):
    """TensorFlow's `TF_ENABLE_ONEDNN_OPTS` where it was set (its oneDNN
    CPU kernels: "1" on, "0" off; unset, TensorFlow decides by the CPU)."""
    setting = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    return {"tf_onednn": setting} if backend == "tensorflow" and setting else {}


def _run_in(backend, python, name, neutral=False):
    result = subprocess.run(
        [python, "-m", "bench.backends", f"--case={name}"]
        + [f"--repeats={_REPEATS.value}", f"--neutral={neutral}"],
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": backend},
    )
    lines = [line for line in result.stdout.splitlines() if line]
    if result.returncode or not lines:
        return {
            "name": f"backends_{name}",
            "backend": backend,
            "error": result.stderr[-500:],
        }
    return json.loads(lines[-1])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if _CASE.value:
        print(json.dumps(run_case(_CASE.value)), flush=True)
        return
    from bench.routing_shapes import SHAPES

    pythons = dict(entry.split("=", 1) for entry in _PYTHONS.value)
    pythons = pythons or {"tensorflow": sys.executable}
    for name in _SHAPES.value or list(SHAPES):
        for backend, python in pythons.items():
            print(json.dumps(_run_in(backend, python, name)), flush=True)
            if backend == "tensorflow" and _NEUTRAL.value:
                result = _run_in(backend, python, name, neutral=True)
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    app.run(main)
