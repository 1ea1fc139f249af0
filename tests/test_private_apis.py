"""Each workaround on a private TensorFlow or Keras API does what it is
for on the installed releases (`keras_capsules.private_apis`). The
multi-worker one also runs end to end in tests/examples/test_multi_worker.py.
"""

import importlib

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import private_apis


class PrivateApisTest(tf.test.TestCase):
    def test_compiling_with_xla_tells_which_compiler_traces(self):
        seen = {}

        def probe(name):
            seen[name] = private_apis.compiling_with_xla()
            return tf.constant(0.0)

        probe("eager")
        tf.function(lambda: probe("graph"))()
        tf.function(lambda: probe("xla"), jit_compile=True)()
        self.assertEqual(seen, {"eager": False, "graph": False, "xla": True})

    def test_set_initial_epoch_makes_fit_start_there(self):
        class StartAtTwo(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                private_apis.set_initial_epoch(self.model, 2)

        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        epochs = []
        history = model.fit(
            np.ones((4, 3)),
            np.ones((4, 1)),
            epochs=4,
            verbose=0,
            callbacks=[
                StartAtTwo(),
                keras.callbacks.LambdaCallback(
                    on_epoch_begin=lambda epoch, logs: epochs.append(epoch)
                ),
            ],
        )
        self.assertEqual(epochs, [2, 3])
        self.assertLen(history.history["loss"], 2)

    def test_variable_index_is_the_slot_of_each_variable(self):
        variables = [keras.Variable(np.zeros(2)), keras.Variable(np.ones(3))]
        optimizer = keras.optimizers.Adam()
        optimizer.build(variables)
        indices = [private_apis.variable_index(optimizer, v) for v in variables]
        self.assertEqual(indices, [0, 1])

    def test_multi_worker_workaround_leaves_other_strategies_alone(self):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        before = model._maybe_symbolic_build
        trainer = importlib.import_module(
            "keras.src.backend.tensorflow.trainer"
        )
        reduce = trainer.reduce_per_replica
        private_apis.work_around_multi_worker_fit(model)
        self.assertEqual(model._maybe_symbolic_build, before)
        self.assertIs(trainer.reduce_per_replica, reduce)
        # What it patches under MultiWorkerMirroredStrategy is there.
        self.assertTrue(callable(model._symbolic_build))


if __name__ == "__main__":
    tf.test.main()
