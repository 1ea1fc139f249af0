"""Benchmarks I_s(beta): evaluations per second and accuracy, as s grows.

The recursions take about s + sqrt(s) steps, so cost grows with the order
s = dm / 2. Accuracy is measured against the tests' 40-digit quadrature of
eq. 31 at beta from 1e-8 to 1e6. Prints JSON lines; never asserts.

Usage: python -m bench.interpolating_coefficient
"""

import json
import os
import platform
import time

import numpy as np
import tensorflow as tf
from absl import app

from keras_capsules import ops
from tests.ops.test_interpolating_coefficient import BETAS, references

_ORDERS = (0.5, 5.0, 40.0, 80.0, 256.0)
_BATCH = 4096


def _max_relative_errors(s, dtype):
    expected_value, expected_gradient = references(s)
    beta = tf.constant(BETAS, dtype)
    with tf.GradientTape() as tape:
        tape.watch(beta)
        value = ops.interpolating_coefficient(beta, s)
    gradient = tape.gradient(value, beta).numpy()
    value = value.numpy()
    kept = expected_value != 0
    value_error = np.abs(value[kept] - expected_value[kept]) / np.abs(
        expected_value[kept]
    )
    kept = np.abs(expected_gradient) > 1e-30
    gradient_error = np.abs(gradient[kept] - expected_gradient[kept]) / np.abs(
        expected_gradient[kept]
    )
    return float(value_error.max()), float(gradient_error.max())


def _evaluations_per_second(s, dtype, repeats=5):
    beta = tf.constant(np.logspace(-3, 4, _BATCH), dtype)
    function = tf.function(
        lambda b: ops.interpolating_coefficients(b, s), jit_compile=True
    )
    function(beta)  # Compile.
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        [t.numpy() for t in function(beta)]
        best = min(best, time.perf_counter() - start)
    return _BATCH / best


def main(argv):
    del argv
    device = (
        "GPU"
        if tf.config.list_physical_devices("GPU")
        else (f"CPU, {os.cpu_count()} cores, {platform.machine()}")
    )
    for dtype in ("float32", "float64"):
        for s in _ORDERS:
            value_error, gradient_error = _max_relative_errors(s, dtype)
            print(
                json.dumps(
                    {
                        "name": "interpolating_coefficient",
                        "s": s,
                        "dtype": dtype,
                        "batch": _BATCH,
                        "evaluations_per_second": round(
                            _evaluations_per_second(s, dtype)
                        ),
                        "max_relative_error_value": float(f"{value_error:.2g}"),
                        "max_relative_error_gradient": float(
                            f"{gradient_error:.2g}"
                        ),
                        "device": device,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    app.run(main)
