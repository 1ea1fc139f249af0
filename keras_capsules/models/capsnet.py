"""CapsNet: convolution, primary capsules, routed class capsules and a
reconstruction decoder (Sabour, Frosst, Hinton 2017, sec. 4)."""

import dataclasses
import importlib
import math

import keras
from keras import ops

from keras_capsules import layers
from keras_capsules.losses import MarginLoss, ReconstructionLoss
from keras_capsules.models.capsnet_config import CapsNetConfig
from keras_capsules.models.paper_backbones import capsnet_layers


@keras.saving.register_keras_serializable(package="keras_capsules")
class CapsNet(keras.Model):
    """The paper's CapsNet for any image shape and number of classes.

    Conv (ReLU) -> `PrimaryCapsules` -> `DynamicRouting` class capsules ->
    `CapsuleLength` (the model's output: one score in [0, 1) per class).
    While training, a decoder (fully connected ReLU layers, then a sigmoid
    layer of the image's size) reconstructs the input from the true class's
    capsule (`CapsuleMask`), and `reconstruction_weight` times the summed
    squared pixel error joins the compiled loss (the margin loss unless
    another is given). Evaluation decodes the longest capsule.

    `predict` and `__call__` return the class-capsule lengths; `encode`
    returns the class capsules and `reconstruct` decodes them.

    Args:
        image_shape: `(H, W, C)` of the input images, values in [0, 1].
        num_classes: int, class capsules.
        config: a `CapsNetConfig` (sizes, iterations, decoder, the
            reconstruction loss's weight), the name of one of its presets
            (`"paper"`, `"small"`) or None for the paper's.
        **kwargs: base model arguments (`name`).

    Examples:

        >>> model = CapsNet((28, 28, 1), 10, config="small")
        >>> tuple(model(np.zeros((2, 28, 28,
        ...       1))).shape)  # class-capsule lengths
        (2, 10)
    """

    def __init__(self, image_shape, num_classes, config=None, **kwargs):
        super().__init__(**kwargs)
        image_shape = tuple(int(size) for size in image_shape)
        if len(image_shape) != 3:
            raise ValueError(
                "`CapsNet` expects `image_shape` as (height, width, "
                f"channels). Received: image_shape={image_shape}."
            )
        self.image_shape = image_shape
        self.num_classes = num_classes
        self.config = config = self.CONFIG.get(config)
        self.reconstruction_weight = float(config.reconstruction_weight)
        (
            self.convolution,
            self.primary_capsules,
            self.class_capsules,
        ) = self._capsule_layers(config, num_classes)
        self.capsule_length = layers.CapsuleLength(name="capsule_length")
        self.capsule_mask = layers.CapsuleMask(name="capsule_mask")
        self.decoder = keras.Sequential(
            [
                keras.layers.Flatten(),
                *[
                    keras.layers.Dense(units, activation="relu")
                    for units in config.decoder_units
                ],
                keras.layers.Dense(math.prod(image_shape)),
                # The sigmoid in float32: mixed precision keeps pixels exact.
                keras.layers.Activation("sigmoid", dtype="float32"),
                keras.layers.Reshape(image_shape),
            ],
            name="decoder",
        )
        self.reconstruction_loss = ReconstructionLoss()
        self.reconstruction_tracker = keras.metrics.Mean(
            name="reconstruction_loss"
        )

    # The settings' class; a model of the same form with other capsule
    # layers (`EfficientCapsNet`) names its own.
    CONFIG = CapsNetConfig

    @staticmethod
    def _capsule_layers(config, num_classes):
        """The backbone (`capsnet_backbone`: convolution, primary capsules)
        and the routing head, each a layer."""
        convolution, primary_capsules = capsnet_layers(config)
        class_capsules = layers.DynamicRouting(
            num_classes,
            config.capsule_dim,
            num_iterations=config.num_iterations,
            name="class_capsules",
        )
        return convolution, primary_capsules, class_capsules

    def build(self, input_shape):
        shape = tuple(input_shape)
        for layer in (
            self.convolution,
            self.primary_capsules,
            self.class_capsules,
        ):
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
        _, (batch, count, _, dim) = shape
        shape = (batch, count, dim)
        self.capsule_length.build(shape)
        self.capsule_mask.build(shape)
        self.decoder.build(shape)

    def encode(self, images, training=None):
        """Returns the class capsules `(batch, num_classes, capsule_dim)`."""
        features = self.convolution(images)
        primary = self.primary_capsules(features)
        _, capsules = self.class_capsules(primary, training=training)
        return capsules[:, :, 0, :]

    def reconstruct(self, capsules, labels=None):
        """Decodes the capsules of `labels` (ids or multi-hot), or of the
        longest capsule if `labels` is None, to `(batch, *image_shape)`."""
        if labels is None:
            return self.decoder(self.capsule_mask(capsules))
        labels = ops.convert_to_tensor(labels)
        # training=True makes the mask keep the labelled capsules.
        return self.decoder(
            self.capsule_mask([capsules, labels], training=True)
        )

    def call(self, images, training=None):
        return self.capsule_length(self.encode(images, training=training))

    def compile(self, optimizer="adam", loss=None, **kwargs):
        """As `keras.Model.compile`; the loss defaults to `MarginLoss()`."""
        super().compile(
            optimizer=optimizer, loss=loss or MarginLoss(), **kwargs
        )

    def compile_from_config(self, config):
        """Recompiles a loaded model as it was saved (with `compile` above)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _reconstruction_loss(self, images, capsules, labels, weight, training):
        """The decoder's loss on the capsule of each true class (training)
        or each longest capsule (evaluation)."""
        mask_input = [capsules, labels] if training else capsules
        reconstruction = self.decoder(
            self.capsule_mask(mask_input, training=training)
        )
        return self.reconstruction_loss(images, reconstruction, weight)

    def _step(self, images, labels, sample_weight, training):
        capsules = self.encode(images, training=training)
        lengths = self.capsule_length(capsules)
        classification_loss = self.compute_loss(
            images, labels, lengths, sample_weight, training=training
        )
        reconstruction_loss = self._reconstruction_loss(
            images, capsules, labels, sample_weight, training
        )
        loss = classification_loss + (
            self.reconstruction_weight * reconstruction_loss
        )
        return lengths, loss, reconstruction_loss

    def compute_loss(
        self, x=None, y=None, y_pred=None, sample_weight=None, training=True
    ):
        """The margin loss of `y_pred`, plus, on JAX and PyTorch (whose
        training and test steps are Keras's own), the weighted
        reconstruction loss. Those steps pass the images but not the
        capsules, so this encodes them again (under `jax.jit`, XLA merges
        the two identical encodings)."""
        loss = super().compute_loss(x, y, y_pred, sample_weight, training)
        if keras.backend.backend() == "tensorflow":
            return loss  # `_step` adds the reconstruction loss.
        capsules = self.encode(x, training=training)
        reconstruction_loss = self._reconstruction_loss(
            x, capsules, y, sample_weight, training
        )
        self.reconstruction_tracker.update_state(
            reconstruction_loss, ops.shape(x)[0]
        )
        return loss + self.reconstruction_weight * reconstruction_loss

    def train_step(self, *args):
        """The margin loss plus the weighted reconstruction loss of the
        true class's capsule: TensorFlow's step here, Keras's own step
        with `compute_loss` on the other backends."""
        if keras.backend.backend() != "tensorflow":
            return super().train_step(*args)
        (data,) = args
        tf, gradient_step = _tensorflow_parts()
        images, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        with tf.GradientTape() as tape:
            lengths, loss, reconstruction_loss = self._step(
                images, labels, sample_weight, training=True
            )
        gradient_step.minimize(self, tape, loss)
        return self._update_metrics(
            images, labels, lengths, loss, reconstruction_loss, sample_weight
        )

    def test_step(self, *args):
        """The training step's two losses, without updates."""
        if keras.backend.backend() != "tensorflow":
            return super().test_step(*args)
        (data,) = args
        images, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        lengths, loss, reconstruction_loss = self._step(
            images, labels, sample_weight, training=False
        )
        return self._update_metrics(
            images, labels, lengths, loss, reconstruction_loss, sample_weight
        )

    def _update_metrics(
        self, images, labels, lengths, loss, reconstruction_loss, weight
    ):
        # Losses are divided by the number of replicas for the gradient sum;
        # the trackers report the per-example value.
        tf, gradient_step = _tensorflow_parts()
        replicas = tf.distribute.get_replica_context().num_replicas_in_sync
        batch_size = tf.shape(images)[0]
        gradient_step.update_loss_metric(self, loss, batch_size)
        self.reconstruction_tracker.update_state(
            reconstruction_loss * replicas, batch_size
        )
        return self.compute_metrics(images, labels, lengths, weight)

    def get_config(self):
        return {
            "name": self.name,
            "image_shape": self.image_shape,
            "num_classes": self.num_classes,
            "config": self.config.get_config(),
        }

    @classmethod
    def from_config(cls, config):
        """The model of `config`; configs of earlier releases gave the
        settings as separate arguments."""
        config = dict(config)
        names = {field.name for field in dataclasses.fields(cls.CONFIG)}
        settings = {key: config.pop(key) for key in names & set(config)}
        if "primary_convolution_algorithm" in config:
            settings["convolution_algorithm"] = config.pop(
                "primary_convolution_algorithm"
            )
        if settings:
            config["config"] = settings
        return cls(**config)


def capsnet(image_shape=(28, 28, 1), num_classes=10, config=None, **kwargs):
    """Returns a built `CapsNet`; the arguments are `CapsNet`'s.

    Examples:

        >>> model = capsnet((28, 28, 1), 10, config="small")
        >>> model.compile(optimizer="adam", metrics=["accuracy"])
        >>> tuple(model(np.zeros((2, 28, 28, 1))).shape)
        (2, 10)
    """
    model = CapsNet(image_shape, num_classes, config, **kwargs)
    model.build((None, *model.image_shape))
    # A symbolic call (no computation) records the input signature, so
    # `model.export` works before any real call.
    model(keras.KerasTensor((None, *model.image_shape)))
    return model


def _tensorflow_parts():
    """`(tensorflow, recipes.gradient_step)`, imported when a TensorFlow
    training or test step first runs."""
    return (
        importlib.import_module("tensorflow"),
        importlib.import_module("keras_capsules.recipes.gradient_step"),
    )
