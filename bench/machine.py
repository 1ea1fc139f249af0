"""The machine's own limits, measured in the run that uses them: the
float32 matrix-multiply rate (the compute bound) and the memory copy
bandwidth (the traffic bound), so that a benchmark's percentage of the
bound needs no other machine. Where TensorFlow sees a GPU, both are the
GPU's: its matmul rate (TensorFloat-32 where TensorFlow enables it, as it
does for the layers' own float32 products) and its memory's copy rate.

Usage: python -m bench.machine
"""

import json
import time

import numpy as np
import tensorflow as tf
from absl import app

from bench import measure

# A square matmul big enough to run at the device's peak, and a copy far
# bigger than any cache; on a GPU, several of each per call, so that the
# call's launch and synchronisation vanish from the timing.
_MATMUL_SIZE = {"CPU": 2048, "GPU": 8192}
_COPY_BYTES = {"CPU": 256 * 2**20, "GPU": 2**30}
_PASSES_PER_CALL = {"CPU": 1, "GPU": 10}


def _device_kind():
    return "GPU" if measure.on_gpu() else "CPU"


def matmul_gflops(size=None, repeats=5):
    """float32 GFLOP/s of `tf.matmul` of `size` x `size` matrices (2
    size^3 FLOPs each), the best of `repeats`, in a `tf.function` (on a
    GPU, a chain of ten products per call)."""
    kind = _device_kind()
    size = size or _MATMUL_SIZE[kind]
    products = _PASSES_PER_CALL[kind]
    rng = np.random.default_rng(0)
    # Scaled to keep the chain's norms near 1.
    a, b = (
        tf.constant(rng.normal(size=(size, size)) / np.sqrt(size), tf.float32)
        for _ in "ab"
    )

    @tf.function
    def multiply():
        product = b
        for _ in range(products):
            product = tf.matmul(a, product)
        return product[0, 0]

    seconds = measure.best_seconds(lambda: multiply().numpy(), repeats)
    return products * 2 * size**3 / seconds / 1e9


def copy_gb_per_second(num_bytes=None, repeats=5):
    """Bytes read plus bytes written per second by a copy of a
    `num_bytes` array (STREAM's Copy), in GB/s: on the CPU a NumPy copy;
    on a GPU, ten passes that each read the array and write a scaled copy
    (with Grappler's arithmetic optimisation off, which would otherwise
    multiply the scales first and make the ten passes one)."""
    kind = _device_kind()
    num_bytes = num_bytes or _COPY_BYTES[kind]
    if kind == "GPU":
        return _gpu_copy_gb_per_second(num_bytes, repeats)
    source = np.ones(num_bytes // 4, np.float32)
    target = np.empty_like(source)
    best = np.inf
    for _ in range(repeats + 1):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * num_bytes / best / 1e9


def _gpu_copy_gb_per_second(num_bytes, repeats):
    passes = _PASSES_PER_CALL["GPU"]
    source = tf.ones([num_bytes // 4], tf.float32)
    scale = tf.Variable(1.0)

    @tf.function
    def copy():
        target = source
        for _ in range(passes):
            target = target * scale
        return target[0]

    was_on = tf.config.optimizer.get_experimental_options().get(
        "arithmetic_optimization",
        True,  # On unless set.
    )
    tf.config.optimizer.set_experimental_options(
        {"arithmetic_optimization": False}
    )
    try:
        seconds = measure.best_seconds(lambda: copy().numpy(), repeats)
    finally:
        tf.config.optimizer.set_experimental_options(
            {"arithmetic_optimization": was_on}
        )
    return passes * 2 * num_bytes / seconds / 1e9


def limits():
    """`{"matmul_gflops", "copy_gb_per_s", "threads", "device"}` of this
    machine (the GPU's rates where TensorFlow sees one, with
    `tensor_float_32`: whether its float32 products use TensorFloat-32)."""
    result = {
        "matmul_gflops": round(matmul_gflops(), 1),
        "copy_gb_per_s": round(copy_gb_per_second(), 1),
        "threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "device": measure.device_name(),
    }
    if measure.on_gpu():
        result["tensor_float_32"] = (
            tf.config.experimental.tensor_float_32_execution_enabled()
        )
    return result


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    print(json.dumps({"name": "machine", **limits()}), flush=True)


if __name__ == "__main__":
    app.run(main)
