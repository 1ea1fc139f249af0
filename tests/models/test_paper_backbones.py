"""The paper models' backbones: each gives the capsule contract, each paper
model is its backbone plus its routing head, and `capsule_classifier`
routes a backbone's capsules with any family."""

import keras
import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import models
from tests.every_backend import TestCase, loss_gradients, numpy

IMAGE_SHAPE = (28, 28, 1)


def capsnet_backbone():
    return models.capsnet_backbone(IMAGE_SHAPE, "small")


def heinsen_backbone():
    return models.heinsen_image_backbone(IMAGE_SHAPE, filters=8, num_parts=4)


def matrix_backbone():
    return models.matrix_capsnet_backbone(8, 4, IMAGE_SHAPE)


BACKBONES = {
    "capsnet": capsnet_backbone,
    "heinsen": heinsen_backbone,
    "matrix": matrix_backbone,
}
# The backbone of each paper model, and the paper model from the same
# sizes; the name of the backbone's last layer in both.
PAPER_MODELS = {
    "heinsen": (
        heinsen_backbone,
        lambda: models.heinsen_image(
            IMAGE_SHAPE, 3, filters=8, num_parts=4, num_iterations=2
        ),
        ("input_scores", "input_poses"),
    ),
    "matrix": (
        matrix_backbone,
        lambda: models.matrix_capsnet(8, 4, 4, 4, 3, IMAGE_SHAPE),
        ("primary_caps",),
    ),
}


def images(count=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, (count, *IMAGE_SHAPE)).astype("float32")


def outputs_of(model, layer_names):
    """The outputs of the named layers of a functional model, as a list."""
    outputs = []
    for name in layer_names:
        output = model.get_layer(name).output
        outputs.extend(output if isinstance(output, list) else [output])
    return outputs


class PaperBackbonesTest(TestCase):
    @parameterized.named_parameters(
        ("capsnet", "capsnet", (2, 288), (2, 288, 1, 8)),
        ("heinsen", "heinsen", (2, 64), (2, 64, 4, 4)),
        ("matrix", "matrix", (2, 12, 12, 4), (2, 12, 12, 4, 4, 4)),
    )
    def test_gives_capsules_in_the_contract(self, name, logits, poses):
        got_logits, got_poses = BACKBONES[name]()(images())
        self.assertEqual(tuple(got_logits.shape), logits)
        self.assertEqual(tuple(got_poses.shape), poses)
        self.assertTrue(np.all(np.isfinite(numpy(got_logits))))
        self.assertTrue(np.all(np.isfinite(numpy(got_poses))))

    @parameterized.named_parameters(
        ("heinsen", "heinsen"), ("matrix", "matrix")
    )
    def test_paper_model_is_its_backbone_and_a_head(self, name):
        make_backbone, make_model, last_layers = PAPER_MODELS[name]
        keras.utils.set_random_seed(0)
        backbone = make_backbone()
        keras.utils.set_random_seed(0)
        model = make_model()
        # The same layers in the same order, so the same initial weights.
        in_model = keras.Model(model.input, outputs_of(model, last_layers))
        self.assertEqual(
            [layer.name for layer in in_model.layers],
            [layer.name for layer in backbone.layers],
        )
        for got, want in zip(in_model(images()), backbone(images())):
            self.assertAllEqual(got, want)

    def test_capsnet_builds_the_backbone_layers(self):
        keras.utils.set_random_seed(0)
        backbone = capsnet_backbone()
        keras.utils.set_random_seed(0)
        model = models.capsnet(IMAGE_SHAPE, 3, "small")
        layers = (model.convolution, model.primary_capsules)
        for got, want in zip(layers, backbone.layers[1:]):
            self.assertEqual(got.get_config(), want.get_config())
            for got_weight, want_weight in zip(got.weights, want.weights):
                self.assertAllEqual(got_weight, want_weight)

    @parameterized.product(
        backbone=tuple(BACKBONES), routing=("dynamic", "em", "heinsen")
    )
    def test_any_routing_on_any_paper_backbone(self, backbone, routing):
        keras.utils.set_random_seed(0)
        model = models.capsule_classifier(
            IMAGE_SHAPE, 3, routing=routing, backbone=BACKBONES[backbone]()
        )
        logits = model(images())
        self.assertEqual(tuple(logits.shape), (2, 3))
        self.assertTrue(np.all(np.isfinite(numpy(logits))))
        # Routed from the backbone's capsules: no primary stage of its own.
        names = [layer.name for layer in model.layers]
        self.assertNotIn("primary_caps", names)
        gradients = loss_gradients(
            lambda x: keras.ops.sum(model(x)),
            [images()],
            model.trainable_variables,
        )
        self.assertTrue(all(np.all(np.isfinite(g)) for g in gradients))

    def test_a_capsule_backbone_saves_and_loads(self):
        keras.utils.set_random_seed(0)
        model = models.capsule_classifier(
            IMAGE_SHAPE, 3, routing="heinsen", backbone=heinsen_backbone()
        )
        path = self.create_tempfile(file_path="model.keras").full_path
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertAllClose(restored(images()), model(images()), rtol=1e-6)

    def test_bad_backbones_and_options_are_refused(self):
        with self.assertRaisesRegex(ValueError, "routing='regression'"):
            models.capsule_classifier(
                IMAGE_SHAPE, 3, routing="regression", backbone=matrix_backbone()
            )
        inputs = keras.Input(IMAGE_SHAPE)
        three = keras.Model(inputs, [inputs, inputs, inputs])
        with self.assertRaisesRegex(ValueError, r"Received outputs of shapes"):
            models.capsule_classifier(IMAGE_SHAPE, 3, backbone=three)
        with self.assertRaisesRegex(ValueError, "padding.*'reflect'"):
            models.heinsen_image_backbone(IMAGE_SHAPE, padding="reflect")


if __name__ == "__main__":
    absltest.main()
