"""One training step of every model under `mixed_float16` moves the
weights as the same step in float32 does (loss scaling and all)."""

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import layers, losses, models, recipes

_LEARNING_RATE = 0.01
# A step that forgot `scale_loss` would be this many times too small.
_INITIAL_LOSS_SCALE = 2.0**7


def _images(shape, count=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(count, *shape)).astype("float32")


def _labels(num_classes, count=8):
    return np.arange(count) % num_classes


def capsnet():
    model = models.capsnet(
        (12, 12, 1),
        2,
        models.CapsNetConfig(
            conv_filters=8,
            conv_kernel_size=3,
            primary_capsule_types=4,
            primary_kernel_size=3,
            capsule_dim=4,
            decoder_units=(16,),
        ),
    )
    return model, {}, (_images((12, 12, 1)), _labels(2))


def vae():
    model = models.VariationalAutoencoder((8, 8, 1), latent_dim=3, seed=0)
    model.build()
    return model, {}, (_images((8, 8, 1)),)


def generative_capsules(**options):
    config = models.GenerativeCapsuleConfig(
        num_top_capsules=2, num_template_capsules=3, template_size=6, **options
    )
    model = models.generative_capsule_autoencoder(
        image_shape=(16, 16, 1), config=config, seed=0
    )
    return model, {}, (_images((16, 16, 1)),)


def single_parent_generative_capsules():
    return generative_capsules(
        top_posterior_family="single_parent",
        single_parent_balance_temperature=1.0,
        top_pose_refinement_steps=1,
    )


def mixup_heinsen():
    classifier = models.heinsen_image((12, 12, 1), 2, filters=8, num_parts=4)
    # Betas of 1: at their initial 0 the step is a difference of nearly
    # equal use totals (uniform routing), noise in any precision.
    for layer in classifier.layers:
        for weight in layer.weights:
            if "beta_" in weight.path:
                weight.assign(np.ones(weight.shape))
    model = recipes.MixupClassifier(classifier, alpha=0.2, seed=0)
    loss = keras.losses.CategoricalCrossentropy(from_logits=True)
    labels = np.eye(2, dtype="float32")[_labels(2)]
    return model, {"loss": loss}, (_images((12, 12, 1)), labels)


def classifier(routing):
    def make():
        model = models.capsule_classifier(
            (12, 12, 1), 2, routing=routing, num_primary_types=2
        )
        loss = models.classifier_loss(routing)
        return model, {"loss": loss}, (_images((12, 12, 1)), _labels(2))

    return make


def matrix_capsnet():
    model = models.small_matrix_capsnet(
        5, (24, 24, 1), routing=layers.EMRouting(num_iterations=2)
    )
    return (
        model,
        {"loss": losses.SpreadLoss()},
        (
            _images((24, 24, 1)),
            _labels(5),
        ),
    )


MODELS = [
    ("capsnet", capsnet),
    ("vae", vae),
    ("generative_capsules", generative_capsules),
    ("single_parent_generative_capsules", single_parent_generative_capsules),
    ("mixup_heinsen_image", mixup_heinsen),
    ("matrix_capsnet", matrix_capsnet),
    *[(f"classifier_{r}", classifier(r)) for r in models.ROUTINGS],
]


def step_update(make, policy, initial_weights=None):
    """`(all weights before, change of the trainable weights in the first
    SGD step that changes them)` under `policy`."""
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        model, compile_kwargs, data = make()
        optimizer = keras.optimizers.SGD(_LEARNING_RATE)
        if policy == "mixed_float16":
            # What compile does under mixed_float16, from a smaller scale
            # so that the first step applies: skipped steps would draw
            # other random numbers (noise, mixup) before the step compared.
            optimizer = keras.optimizers.LossScaleOptimizer(
                optimizer, initial_scale=_INITIAL_LOSS_SCALE
            )
        model.compile(optimizer=optimizer, **compile_kwargs)
        model(data[0])
        if initial_weights is not None:
            model.set_weights(initial_weights)
        weights = model.get_weights()
        before = [
            np.array(w.numpy(), "float64") for w in model.trainable_weights
        ]
        # A dynamic loss scale skips the steps whose float16 gradients
        # overflow, halving the scale each time.
        for _ in range(10):
            model.train_on_batch(*data)
            changes = [
                np.asarray(w, "float64") - b
                for w, b in zip(model.trainable_weights, before)
            ]
            if any(np.any(change != 0) for change in changes):
                break
    finally:
        keras.mixed_precision.set_dtype_policy(previous)
    return weights, np.concatenate([c.ravel() for c in changes])


class MixedPrecisionStepTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(*MODELS)
    def test_float16_step_moves_the_weights_as_float32(self, make):
        weights, full = step_update(make, "float32")
        _, mixed = step_update(make, "mixed_float16", weights)
        self.assertGreater(np.linalg.norm(full), 0.0)
        # float16 activations change the step by a few percent; a step
        # that skipped loss scaling would be 2^15 times too small.
        relative = np.linalg.norm(mixed - full) / np.linalg.norm(full)
        self.assertLess(relative, 0.1)


if __name__ == "__main__":
    tf.test.main()
