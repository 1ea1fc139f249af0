"""Batch normalization that sees the global batch under a tf.distribute
strategy, so that data-parallel training computes what one device does."""

import importlib

import keras


def batch_normalization(**kwargs):
    """A `keras.layers.BatchNormalization` (keyword arguments as there)
    whose batch statistics are synchronized across replicas when the
    model is built under a distribution strategy (each replica then
    normalises with the mean and variance of the global batch, as one
    device would). Without a strategy it is the plain layer, as on JAX,
    where `keras.distribution`'s data parallelism compiles one program
    for the global batch, whose statistics are those of the global batch
    already."""
    return keras.layers.BatchNormalization(
        synchronized=_under_a_strategy(), **kwargs
    )


def _under_a_strategy():
    if keras.backend.backend() != "tensorflow":
        return False
    return importlib.import_module("tensorflow").distribute.has_strategy()
