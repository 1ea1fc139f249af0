"""What every benchmark reports: best-of timings, peak memory, device."""

import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf


def best_seconds(run, repeats):
    """Runs once to trace and compile, then returns the best of `repeats`
    timings of `run()`."""
    run()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def time_step(step, batch_size, repeats):
    """The timing fields of one measurement: `batch_size`,
    `seconds_per_step` (best of `repeats` after a compiling run),
    `examples_per_second`, `peak_memory_mb` (the peak less the memory just
    before the work) and `device`."""
    before = peak_memory_mb()
    seconds = best_seconds(step, repeats)
    return {
        "batch_size": batch_size,
        "seconds_per_step": round(seconds, 5),
        "examples_per_second": round(batch_size / seconds, 1),
        "peak_memory_mb": round(peak_memory_mb() - before),
        "device": device_name(),
    }


def peak_memory_mb():
    """The GPU allocator's peak on a GPU, else the process's peak resident
    set, in MB."""
    if tf.config.list_physical_devices("GPU"):
        return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def device_name():
    """The GPU's name, or the CPU's core count and architecture."""
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        return details.get("device_name", "GPU")
    return f"CPU, {os.cpu_count()} cores, {platform.machine()}"


def run_cases_in_subprocesses(module, cases, flags):
    """Runs `python -m module --case=CASE *flags` for each case, each in its
    own process so that its peak memory is its own, and prints the JSON
    line it printed (or the case and the end of its stderr on failure)."""
    for case in cases:
        result = subprocess.run(
            [sys.executable, "-m", module, f"--case={case}", *flags],
            capture_output=True,
            text=True,
        )
        lines = [line for line in result.stdout.splitlines() if line]
        if result.returncode or not lines:
            print(json.dumps({"case": case, "error": result.stderr[-500:]}))
        else:
            print(lines[-1], flush=True)
