"""Mixup: convex pairs of examples and labels; the classifier wrapper."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import recipes
from keras_capsules.callbacks import ResumableBackup


class MixupTest(tf.test.TestCase):
    def test_mixes_inputs_and_labels_with_the_same_weights(self):
        rng = np.random.default_rng(0)
        images = rng.normal(size=(64, 3, 2)).astype("float32")
        extra = rng.normal(size=(64, 5)).astype("float32")
        labels = np.eye(4, dtype="float32")[rng.integers(0, 4, 64)]
        (mixed, mixed_extra), mixed_labels = recipes.mixup(
            [images, extra], labels, 0.2, seed=1
        )
        mixed, mixed_extra = np.asarray(mixed), np.asarray(mixed_extra)
        mixed_labels = np.asarray(mixed_labels)
        # Every mixed example is lam x_k + (1 - lam) x_p for some partner p
        # and one lam shared by all its inputs and its label.
        flat = np.concatenate([images.reshape(64, -1), extra, labels], 1)
        mixed_flat = np.concatenate(
            [mixed.reshape(64, -1), mixed_extra, mixed_labels], 1
        )
        for k in range(64):
            residual = []
            for p in range(64):
                direction = flat[k] - flat[p]
                lam = (
                    1.0
                    if p == k
                    else np.dot(mixed_flat[k] - flat[p], direction)
                    / np.dot(direction, direction)
                )
                residual.append(
                    np.abs(
                        lam * flat[k] + (1 - lam) * flat[p] - mixed_flat[k]
                    ).max()
                )
            self.assertLess(min(residual), 1e-4)
        self.assertAllClose(mixed_labels.sum(-1), np.ones(64))

    def test_partners_are_a_permutation(self):
        # Identity labels name each example's partner and weight exactly;
        # Beta(1000, 1000) keeps the weights near 1/2, so every partner
        # shows.
        rng = np.random.default_rng(2)
        x = rng.normal(size=(32, 6)).astype("float32")
        mixed, labels = recipes.mixup(
            x, np.eye(32, dtype="float32"), 1000.0, seed=4
        )
        labels = np.asarray(labels)
        lam = np.diag(labels).copy()
        others = labels - np.diag(lam)
        # An example the permutation leaves in place is mixed with itself.
        partners = np.where(
            others.max(axis=1) > 0, others.argmax(axis=1), np.arange(32)
        )
        self.assertEqual(sorted(partners.tolist()), list(range(32)))
        self.assertAllClose(
            mixed,
            lam[:, None] * x + (1 - lam[:, None]) * x[partners],
            atol=1e-5,
        )

    def test_beta_weights_favour_the_ends(self):
        labels = np.tile(np.eye(2, dtype="float32"), (500, 1))
        _, mixed = recipes.mixup(np.zeros((1000, 1)), labels, 0.2, seed=3)
        weight = np.asarray(mixed)[:, 0]
        near_ends = np.mean((weight < 0.1) | (weight > 0.9))
        self.assertGreater(near_ends, 0.5)  # Beta(0.2, 0.2) is U-shaped.

    def test_rejects_non_positive_alpha(self):
        with self.assertRaisesRegex(ValueError, "alpha"):
            recipes.mixup(np.zeros((2, 1)), np.eye(2), 0.0)


def tiny_classifier():
    inputs = keras.Input((4,))
    return keras.Model(inputs, keras.layers.Dense(3)(inputs))


class MixupClassifierTest(tf.test.TestCase):
    def test_trains_saves_and_resumes(self):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(64, 4)).astype("float32")
        y = np.eye(3, dtype="float32")[np.argmax(x[:, :3], axis=1)]
        model = recipes.MixupClassifier(tiny_classifier(), alpha=0.2, seed=0)
        model.compile(
            optimizer=keras.optimizers.Adam(0.05),
            loss=keras.losses.CategoricalCrossentropy(from_logits=True),
            metrics=["categorical_accuracy"],
        )
        history = model.fit(x, y, batch_size=16, epochs=25, verbose=0)
        self.assertLess(history.history["loss"][-1], history.history["loss"][0])
        _, accuracy = model.evaluate(x, y, verbose=0)
        self.assertGreater(accuracy, 0.8)
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(
            restored.predict(x, verbose=0), model.predict(x, verbose=0)
        )
        self.assertEqual(int(restored.optimizer.iterations), 100)
        restored.fit(x, y, batch_size=16, epochs=1, verbose=0)

    def test_a_run_stopped_mid_epoch_resumes_its_draws(self):
        # The mixing weights and partners come from a seed generator: a
        # run resumed from a backup draws what an uninterrupted run draws
        # (the script-level kill test of train_heinsen_image is `slow`).
        rng = np.random.default_rng(0)
        x = rng.normal(size=(32, 4)).astype("float32")
        y = np.eye(3, dtype="float32")[np.argmax(x[:, :3], axis=1)]

        def epoch_batches(epoch):
            return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)

        class Stop(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if batch == 1 and self.model.optimizer.iterations > 4:
                    raise KeyboardInterrupt

        def run(backup_dir, callbacks=()):
            keras.utils.set_random_seed(0)
            model = recipes.MixupClassifier(
                tiny_classifier(), alpha=0.2, seed=0
            )
            model.compile(
                optimizer=keras.optimizers.Adam(0.05),
                loss=keras.losses.CategoricalCrossentropy(from_logits=True),
            )
            backup = ResumableBackup(backup_dir, save_freq=1)
            backup.fit(
                model, epoch_batches, 3, callbacks=list(callbacks), verbose=0
            )
            return model.get_weights()

        expected = run(self.create_tempdir().full_path)
        backup_dir = self.create_tempdir().full_path
        with self.assertRaises(KeyboardInterrupt):
            run(backup_dir, [Stop()])
        self.assertEqual(ResumableBackup(backup_dir).position(), (1, 2))
        for got, want in zip(run(backup_dir), expected):
            self.assertAllClose(got, want, rtol=1e-6, atol=1e-6)

    def test_evaluation_mixes_nothing(self):
        model = recipes.MixupClassifier(tiny_classifier(), alpha=0.2)
        x = np.ones((4, 4), "float32")
        self.assertAllClose(model(x), model.classifier(x))


if __name__ == "__main__":
    tf.test.main()
