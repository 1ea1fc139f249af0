"""Benchmarks capsule regression: time per EM iteration and per SGD step.

Prints one JSON object per measurement as n (examples), p (inputs),
d (capsule size) and m (classes) grow. Measures; never asserts.

Usage: python -m bench.capsule_regression [--repeats=3]
"""

import json

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import trainers
from keras_capsules.layers import CapsuleRegression

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")

# (n, p, d, m)
_SHAPES = [
    (10000, 196, 2, 10),
    (50000, 196, 2, 10),
    (50000, 196, 16, 10),
    (50000, 784, 2, 10),
    (50000, 196, 2, 100),
]
_BATCH = 10000


def _data(n, p, m, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, m, n)
    x = (rng.normal(size=(n, p)) + np.eye(m, p)[y] * 3.0).astype("float32")
    return x, y


def bench_em(n, p, d, m):
    x, y = _data(n, p, m)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(_BATCH).cache()
    trainer = trainers.CapsuleRegressionEM(m, d)
    kernel = trainer.prepare(dataset)
    best = measure.best_seconds(
        lambda: trainer.em_update(dataset, kernel, 0.0), _REPEATS.value
    )
    return {
        "name": "em_iteration",
        "n": n,
        "p": p,
        "d": d,
        "m": m,
        "seconds_per_iteration": round(best, 4),
        "examples_per_second": round(n / best),
        "peak_memory_mb": round(measure.peak_memory_mb()),
        "device": measure.device_name(),
    }


def bench_sgd(n, p, d, m, batch_size=128, steps=50):
    x, y = _data(batch_size * steps, p, m)
    model = keras.Sequential([keras.Input((p,)), CapsuleRegression(m, d)])
    model.compile("adam", "sparse_categorical_crossentropy", jit_compile=True)
    best = measure.best_seconds(
        lambda: model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0),
        _REPEATS.value,
    )
    return {
        "name": "sgd_step",
        "batch": batch_size,
        "p": p,
        "d": d,
        "m": m,
        "seconds_per_step": round(best / steps, 6),
        "examples_per_second": round(batch_size * steps / best),
        "peak_memory_mb": round(measure.peak_memory_mb()),
        "device": measure.device_name(),
    }


def main(argv):
    del argv
    for n, p, d, m in _SHAPES:
        print(json.dumps(bench_em(n, p, d, m)), flush=True)
        print(json.dumps(bench_sgd(n, p, d, m)), flush=True)


if __name__ == "__main__":
    app.run(main)
