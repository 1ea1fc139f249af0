"""BatchPartsModel: a batch taken in slices gives the training step,
evaluation and predictions that Keras's own steps give on the whole
batch."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import layers, recipes
from keras_capsules.recipes.batch_parts import part_bounds
from tests.fresh_process import TWO_CPU_DEVICES, run_python


def capsule_classifier(seed=0):
    """Dynamic routing on 6 capsules of 4-D (their lengths as logits) to 3
    class capsules, whose logits a regularized dense layer turns into the
    classifier's."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6, 4))
    logits = layers.CapsuleLength()(inputs)
    poses = keras.layers.Reshape((6, 1, 4))(inputs)
    class_logits, _ = layers.DynamicRouting(3, 5)([logits, poses])
    logits = keras.layers.Dense(
        3, kernel_regularizer=keras.regularizers.L2(0.01)
    )(class_logits)
    return keras.Model(inputs, logits)


def compile_model(model, jit_compile):
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=jit_compile,
    )
    return model


def data(batch_size, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.normal(size=(batch_size, 6, 4)).astype("float32")
    labels = rng.integers(0, 3, batch_size)
    weights = rng.uniform(0.5, 2.0, batch_size).astype("float32")
    return images, labels, weights


class PartBoundsTest(tf.test.TestCase):
    def test_slices_are_numpys_array_split(self):
        for batch_size in range(10):
            for parts in range(1, 5):
                bounds = [int(b) for b in part_bounds(batch_size, parts)]
                want = [
                    len(piece)
                    for piece in np.array_split(np.arange(batch_size), parts)
                ]
                self.assertEqual(bounds[0], 0)
                self.assertEqual(list(np.diff(bounds)), want)


class BatchPartsModelTest(tf.test.TestCase):
    def assert_same_training(self, batch_size, parts, jit_compile):
        """Two steps of the model in each of `parts` against Keras's step
        of the whole batch, from the same weights: weights, loss and
        accuracy."""
        whole = compile_model(capsule_classifier(), jit_compile)
        want = []
        for step in range(2):
            images, labels, weights = data(batch_size, seed=step)
            want.append(
                whole.train_on_batch(
                    images, labels, sample_weight=weights, return_dict=True
                )
            )
        # The steps changed the weights: the comparison is not of the
        # initial ones.
        self.assertNotAllClose(
            whole.weights[0], capsule_classifier().weights[0]
        )
        for count in parts:
            with self.subTest(jit_compile=jit_compile, parts=count):
                in_parts = compile_model(
                    recipes.BatchPartsModel(capsule_classifier(), count),
                    jit_compile,
                )
                for step in range(2):
                    images, labels, weights = data(batch_size, seed=step)
                    got = in_parts.train_on_batch(
                        images, labels, sample_weight=weights, return_dict=True
                    )
                    self.assertAllClose(
                        got["loss"], want[step]["loss"], rtol=1e-5
                    )
                    self.assertAllClose(got["accuracy"], want[step]["accuracy"])
                for got, expected in zip(
                    in_parts.trainable_weights, whole.trainable_weights
                ):
                    self.assertAllClose(got, expected, rtol=1e-5, atol=1e-6)

    def test_uneven_parts_take_the_whole_batchs_step(self):
        for jit_compile in (True, False):
            self.assert_same_training(7, (2, 3), jit_compile)

    def test_fewer_examples_than_parts(self):
        self.assert_same_training(2, (3,), jit_compile=True)

    def test_one_part_is_kerass_step(self):
        self.assert_same_training(5, (1,), jit_compile=True)

    def test_evaluate_and_predict_in_parts_match_the_whole_model(self):
        # 11 examples in batches of 4: slices of 2 and 2, and of 2 and 1
        # for the last batch (3 slices: 2, 1 and 1; 1, 1 and 1).
        images, labels, weights = data(11)

        def evaluate(model):
            return model.evaluate(
                images,
                labels,
                sample_weight=weights,
                batch_size=4,
                verbose=0,
                return_dict=True,
            )

        for jit_compile in (True, False):
            whole = compile_model(capsule_classifier(), jit_compile)
            want = evaluate(whole)
            want_predictions = whole.predict(images, batch_size=4, verbose=0)
            for parts in (2, 3):
                with self.subTest(jit_compile=jit_compile, parts=parts):
                    model = compile_model(
                        recipes.BatchPartsModel(capsule_classifier(), parts),
                        jit_compile,
                    )
                    got = evaluate(model)
                    self.assertAllClose(got["loss"], want["loss"], rtol=1e-5)
                    self.assertAllClose(got["accuracy"], want["accuracy"])
                    self.assertAllClose(
                        model.predict(images, batch_size=4, verbose=0),
                        want_predictions,
                        rtol=1e-5,
                        atol=1e-6,
                    )

    def test_batch_statistics_are_updated_by_each_part_in_turn(self):
        # Batch normalization on the inputs: each part normalises with its
        # own slice's statistics and moves the moving mean in turn.
        rng = np.random.default_rng(0)
        images = rng.normal(size=(7, 3)).astype("float32") + 2.0
        targets = rng.normal(size=(7, 3)).astype("float32")
        for jit_compile in (True, False):
            keras.utils.set_random_seed(0)
            inputs = keras.Input((3,))
            normalization = keras.layers.BatchNormalization(momentum=0.5)
            outputs = keras.layers.Dense(3)(normalization(inputs))
            model = recipes.BatchPartsModel(keras.Model(inputs, outputs), 2)
            model.compile("sgd", "mse", jit_compile=jit_compile)
            model.train_on_batch(images, targets)
            first = 0.5 * images[:4].mean(0)
            want = 0.5 * first + 0.5 * images[4:].mean(0)
            self.assertAllClose(
                normalization.moving_mean, want, rtol=1e-5, atol=1e-6
            )

    def test_mixed_float16_scales_the_loss_as_kerass_step(self):
        keras.mixed_precision.set_dtype_policy("mixed_float16")
        try:
            whole = compile_model(capsule_classifier(), True)
            in_parts = compile_model(
                recipes.BatchPartsModel(capsule_classifier(), parts=2), True
            )
            images, labels, weights = data(8)
            whole.train_on_batch(images, labels, sample_weight=weights)
            in_parts.train_on_batch(images, labels, sample_weight=weights)
            self.assertIsInstance(
                in_parts.optimizer, keras.optimizers.LossScaleOptimizer
            )
            # float16 forward passes over other slices round differently.
            for got, want in zip(
                in_parts.trainable_weights, whole.trainable_weights
            ):
                self.assertAllClose(got, want, rtol=2e-3, atol=2e-3)
        finally:
            keras.mixed_precision.set_dtype_policy("float32")

    def test_fits_saves_loads_and_resumes(self):
        images, labels, _ = data(24)
        model = compile_model(
            recipes.BatchPartsModel(capsule_classifier(), parts=2), True
        )
        model.fit(
            images, labels, batch_size=10, epochs=1, verbose=0, shuffle=False
        )
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
        self.assertIsInstance(loaded, recipes.BatchPartsModel)
        self.assertEqual(loaded.parts, 2)
        self.assertIs(loaded.get_layer(index=1), loaded.model.layers[1])
        self.assertAllClose(loaded.predict(images, verbose=0), model(images))
        self.assertEqual(int(loaded.optimizer.iterations), 3)
        loaded.fit(
            images, labels, batch_size=10, epochs=1, verbose=0, shuffle=False
        )
        model.fit(
            images, labels, batch_size=10, epochs=1, verbose=0, shuffle=False
        )
        for got, want in zip(loaded.weights, model.weights):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)

    def test_replicas_of_a_mirrored_strategy_take_their_rows_in_parts(self):
        # Two CPU replicas need their devices set before TensorFlow starts:
        # a process of its own. Each replica's 9 rows go in 3 slices, the
        # last batch's 2 rows in 1, 1 and an empty slice; the run must end
        # where one device, whole batches, ends.
        result = run_python(
            TWO_CPU_DEVICES,
            """
            import numpy as np
            from keras_capsules import recipes
            from tests.recipes.test_batch_parts import (
                capsule_classifier, compile_model, data)
            images, labels, weights = data(40)
            batches = tf.data.Dataset.from_tensor_slices(
                (images, labels, weights)).batch(18)

            def run(model):
                history = model.fit(batches, epochs=2, verbose=0)
                return (
                    [w.numpy() for w in model.trainable_weights],
                    history.history["loss"],
                    model.evaluate(batches, verbose=0),
                    model.predict(images, batch_size=18, verbose=0),
                )

            # The reference: one device, whole batches, Keras's own step,
            # compiled as the replicas' (XLA and TensorFlow's graphs sum
            # in other orders; two epochs of SGD grow that past 1e-5).
            want = run(compile_model(capsule_classifier(), True))
            strategy = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
            with strategy.scope():
                model = compile_model(
                    recipes.BatchPartsModel(capsule_classifier(), parts=3),
                    True)
            got = run(model)
            for a, b in zip(got[0], want[0]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            for a, b in zip(got[1:], want[1:]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            assert not np.allclose(
                want[0][0], capsule_classifier().trainable_weights[0])
            print("replicas", strategy.num_replicas_in_sync)
            """,
        )
        self.assertIn("replicas 2", result.stdout, result.stderr[-3000:])

    def test_rejects_parts_that_are_not_positive_ints(self):
        for parts in (0, -1, 1.5, True, "2"):
            with self.assertRaisesRegex(ValueError, "parts"):
                recipes.BatchPartsModel(capsule_classifier(), parts=parts)


if __name__ == "__main__":
    tf.test.main()
