"""Batch normalization that sees the global batch under a tf.distribute
strategy, so that data-parallel training computes what one device does."""

import keras
import tensorflow as tf


def batch_normalization(**kwargs):
    """A `keras.layers.BatchNormalization` (keyword arguments as there)
    whose batch statistics are synchronized across replicas when the
    model is built under a distribution strategy (each replica then
    normalises with the mean and variance of the global batch, as one
    device would). Without a strategy it is the plain layer."""
    return keras.layers.BatchNormalization(
        synchronized=tf.distribute.has_strategy(), **kwargs
    )
