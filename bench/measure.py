"""What every benchmark reports: best-of timings, peak memory, device."""

import os
import platform
import resource
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
