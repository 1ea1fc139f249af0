"""`capsule_classifier`: every routing family on one backbone."""

import keras
import numpy as np
from absl.testing import absltest, parameterized
from keras import ops

from keras_capsules import layers, models
from tests.every_backend import TestCase, numpy

ROUTINGS = [(routing, routing) for routing in models.ROUTINGS]


def halves(count=64, seed=0):
    """12x12 images, class 0 brighter on the left, class 1 on the right."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, count)
    images = rng.uniform(0, 0.5, (count, 12, 12, 1)).astype("float32")
    for image, label in zip(images, labels):
        image[:, 6 * label : 6 * label + 6] += 0.5
    return images, labels


def classifier(routing, **kwargs):
    keras.utils.set_random_seed(0)
    return models.capsule_classifier((12, 12, 1), 2, routing=routing, **kwargs)


class CapsuleClassifierTest(TestCase):
    @parameterized.named_parameters(*ROUTINGS)
    def test_learns_an_easy_task_and_saves(self, routing):
        images, labels = halves()
        model = classifier(routing)
        model.compile(
            optimizer=keras.optimizers.Adam(3e-3),
            loss=models.classifier_loss(routing),
            metrics=["sparse_categorical_accuracy"],
        )
        model.fit(images, labels, batch_size=16, epochs=8, verbose=0)
        test_images, test_labels = halves(seed=1)
        _, accuracy = model.evaluate(test_images, test_labels, verbose=0)
        self.assertGreater(accuracy, 0.9)
        path = self.create_tempfile(file_path="model.keras").full_path
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertAllClose(
            restored(test_images), model(test_images), rtol=1e-5, atol=1e-5
        )

    @parameterized.parameters(1, 2)
    def test_em_learns_two_classes_from_other_initialisations(self, seed):
        # Standardised costs of two classes are always -1 and +1: with
        # them, EM kept whatever split its initial weights made.
        images, labels = halves()
        keras.utils.set_random_seed(seed)
        model = models.capsule_classifier((12, 12, 1), 2, routing="em")
        model.compile(
            optimizer=keras.optimizers.Adam(3e-3),
            loss=models.classifier_loss("em"),
            metrics=["sparse_categorical_accuracy"],
        )
        model.fit(images, labels, batch_size=16, epochs=8, verbose=0)
        _, accuracy = model.evaluate(*halves(seed=1), verbose=0)
        self.assertGreater(accuracy, 0.9)

    def test_routing_families_have_the_same_class_capsule_weights(self):
        counts = {}
        for routing in ("dynamic", "em", "heinsen"):
            head = classifier(routing).get_layer("class_capsules")
            counts[routing] = int(np.prod(head.kernel.shape))
        # 3x3 positions x 8 types, 2 classes, 4x4 weights each.
        self.assertEqual(set(counts.values()), {9 * 8 * 2 * 16})

    def test_outputs_are_logits_of_the_class_activations(self):
        model = classifier("dynamic")
        images, _ = halves(4)
        routing = model.get_layer("class_capsules")
        poses = keras.Model(model.input, routing.output[1])(images)
        self.assertAllClose(
            ops.sigmoid(model(images)),
            np.linalg.norm(np.reshape(numpy(poses), (4, 2, -1)), axis=-1),
            rtol=1e-5,
        )

    def test_takes_a_routing_layer_and_a_backbone(self):
        backbone = keras.Sequential(
            [keras.Input((12, 12, 1)), keras.layers.Conv2D(4, 3, strides=3)]
        )
        model = models.capsule_classifier(
            (12, 12, 1),
            3,
            routing=layers.HeinsenRouting(
                3, 2, num_iterations=2, name="class_capsules"
            ),
            backbone=backbone,
        )
        self.assertEqual(tuple(model(np.zeros((2, 12, 12, 1))).shape), (2, 3))
        self.assertEqual(model.get_layer("class_capsules").num_iterations, 2)

    def test_rejects_an_unknown_routing(self):
        with self.assertRaisesRegex(ValueError, "routing.*'vector'"):
            models.capsule_classifier((12, 12, 1), 2, routing="vector")


if __name__ == "__main__":
    absltest.main()
