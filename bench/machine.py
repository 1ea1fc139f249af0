"""The machine's own limits, measured in the run that uses them: the
float32 matrix-multiply rate (the compute bound) and the memory copy
bandwidth (the traffic bound), so that a benchmark's percentage of the
bound needs no other machine.

Usage: python -m bench.machine
"""

import json
import time

import numpy as np
import tensorflow as tf
from absl import app

from bench import measure

# A square matmul big enough to run at the machine's peak, and a copy far
# bigger than any cache.
_MATMUL_SIZE = 2048
_COPY_BYTES = 256 * 2**20


def matmul_gflops(size=_MATMUL_SIZE, repeats=5):
    """float32 GFLOP/s of `tf.matmul` of two `size` x `size` matrices
    (2 size^3 FLOPs), the best of `repeats`, in a `tf.function`."""
    rng = np.random.default_rng(0)
    a, b = (
        tf.constant(rng.normal(size=(size, size)), tf.float32) for _ in "ab"
    )
    multiply = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)[0, 0]))
    seconds = measure.best_seconds(lambda: multiply().numpy(), repeats)
    return 2 * size**3 / seconds / 1e9


def copy_gb_per_second(num_bytes=_COPY_BYTES, repeats=5):
    """Bytes read plus bytes written per second by a copy of a
    `num_bytes` array (STREAM's Copy), in GB/s."""
    source = np.ones(num_bytes // 4, np.float32)
    target = np.empty_like(source)
    best = np.inf
    for _ in range(repeats + 1):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * num_bytes / best / 1e9


def limits():
    """`{"matmul_gflops", "copy_gb_per_s", "device"}` of this machine."""
    return {
        "matmul_gflops": round(matmul_gflops(), 1),
        "copy_gb_per_s": round(copy_gb_per_second(), 1),
        "threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "device": measure.device_name(),
    }


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    print(json.dumps({"name": "machine", **limits()}), flush=True)


if __name__ == "__main__":
    app.run(main)
