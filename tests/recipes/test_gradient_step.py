"""recipes.gradient_step.build_optimizer: the optimizer's variables made
before Keras traces the training step, and only when they can be."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.recipes import gradient_step


def dense_model(built=True):
    model = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(2)])
    if built:
        model.build((None, 4))
    return model


def test_builds_the_optimizer_for_the_trainable_weights():
    model = dense_model()
    model.layers[0].trainable = False
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    gradient_step.build_optimizer(model)
    assert model.optimizer.built
    # Adam keeps a momentum and a velocity per trainable weight (the
    # second layer's kernel and bias).
    slot_shapes = sorted(
        tuple(variable.shape)
        for variable in model.optimizer.variables
        if len(variable.shape)
    )
    assert slot_shapes == [(2,), (2,), (3, 2), (3, 2)]


def test_leaves_an_unbuilt_model_to_keras():
    model = dense_model(built=False)
    model.compile(optimizer="adam", loss="mse")
    gradient_step.build_optimizer(model)
    assert not model.optimizer.built
    model.fit(np.ones((4, 4)), np.ones((4, 2)), verbose=0)
    assert model.optimizer.built


def test_keeps_an_optimizer_already_built():
    model = dense_model()
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 4)), np.ones((4, 2)), verbose=0)
    variables = list(model.optimizer.variables)
    values = [variable.numpy() for variable in variables]
    gradient_step.build_optimizer(model)
    assert model.optimizer.variables == variables
    for variable, value in zip(model.optimizer.variables, values):
        np.testing.assert_array_equal(variable.numpy(), value)
    # The step's momenta are still there (a fresh build would zero them).
    assert any(np.any(value != 0) for value in values if value.ndim)


def test_an_uncompiled_model_is_left_alone():
    model = dense_model()
    gradient_step.build_optimizer(model)
    assert getattr(model, "optimizer", None) is None


@pytest.mark.parametrize("built_first", [False, True])
def test_a_step_traces_once_with_the_optimizer_built(built_first):
    traces = []

    class Counting(keras.Sequential):
        def train_step(self, data):
            traces.append(1)
            return super().train_step(data)

    model = Counting([keras.layers.Dense(2)])
    model.build((None, 4))
    model.compile(optimizer="adam", loss="mse")
    if built_first:
        gradient_step.build_optimizer(model)
    model.fit(tf.ones((8, 4)), tf.ones((8, 2)), batch_size=4, verbose=0)
    # tf.function traces a function that creates variables twice.
    assert len(traces) == (1 if built_first else 2)
