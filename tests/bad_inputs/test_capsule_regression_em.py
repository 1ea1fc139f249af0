"""Bad input to the capsule regression EM trainer: labels out of range,
negative, fractional or one-hot, unbatched data, impossible settings.
Each gets a ValueError that says what was wrong; `(n, 1)` labels work."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import trainers


def batches(features, labels, batch_size=20):
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        batch_size
    )


def data(count=60, p=6, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % 3
    features = rng.normal(size=(count, p)) + labels[:, None]
    return features.astype("float32"), labels


class TrainerBadInputTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(3, 50, -1, 0.5)
    def test_labels_outside_the_classes_are_refused(self, bad):
        features, labels = data()
        labels = labels.astype("float32")
        labels[7] = bad
        trainer = trainers.CapsuleRegressionEM(
            3, 2, schedule={"max_iterations": 2}
        )
        with self.assertRaisesRegex(ValueError, r"class ids in \[0, 3\).*1 "):
            trainer.fit(batches(features, labels), verbose=0)

    def test_bad_validation_labels_are_refused(self):
        features, labels = data()
        trainer = trainers.CapsuleRegressionEM(
            3, 2, schedule={"max_iterations": 2}
        )
        trainer.fit(batches(features, labels), verbose=0)
        with self.assertRaisesRegex(ValueError, r"class ids in \[0, 3\)"):
            trainer.evaluate(batches(features, labels + 1))

    def test_one_hot_labels_and_unbatched_data_are_refused(self):
        features, labels = data()
        trainer = trainers.CapsuleRegressionEM(
            3, 2, schedule={"max_iterations": 2}
        )
        with self.assertRaisesRegex(ValueError, "not one-hot"):
            trainer.fit(batches(features, np.eye(3)[labels]), verbose=0)
        unbatched = tf.data.Dataset.from_tensor_slices((features, labels))
        with self.assertRaisesRegex(ValueError, "dataset.batch"):
            trainer.fit(unbatched, verbose=0)

    def test_labels_of_shape_n_1_train_as_ids(self):
        features, labels = data()
        expected = trainers.CapsuleRegressionEM(
            3, 2, schedule={"max_iterations": 3}
        )
        expected.fit(batches(features, labels), verbose=0)
        column = trainers.CapsuleRegressionEM(
            3, 2, schedule={"max_iterations": 3}
        )
        column.fit(batches(features, labels[:, None]), verbose=0)
        self.assertAllClose(column.kernel, expected.kernel)

    def test_capsules_larger_than_the_features_are_refused(self):
        features, labels = data(p=2)
        trainer = trainers.CapsuleRegressionEM(
            3, 4, schedule={"max_iterations": 2}
        )
        with self.assertRaisesRegex(ValueError, "capsule_dim` <= .* 2"):
            trainer.fit(batches(features, labels), verbose=0)

    @parameterized.named_parameters(
        ("no_iterations", {"max_iterations": 0}, "max_iterations"),
        ("negative_momentum", {"momentum": -5}, "momentum"),
        ("momentum_one", {"momentum": 1.0}, "momentum"),
        ("zero_patience", {"patience": (0,), "thresholds": (0.0,)}, "patience"),
    )
    def test_impossible_settings_are_refused(self, settings, name):
        with self.assertRaisesRegex(ValueError, f"`{name}`"):
            trainers.CapsuleRegressionEM(3, 2, schedule=settings)


if __name__ == "__main__":
    tf.test.main()
