"""A small variational autoencoder: the non-capsule baseline of Smith et
al. (2020, Table 1, third row)."""

import keras
import numpy as np
import tensorflow as tf  # the training step differentiates with a tape
from keras import ops

from keras_capsules.recipes import gradient_step


@keras.saving.register_keras_serializable(package="keras_capsules")
class VariationalAutoencoder(keras.Model):
    """One-hidden-layer VAE (Kingma and Welling, 2014) with a Gaussian
    latent and Bernoulli pixels; the paper's baseline maps a 10-D latent
    to images through 128 hidden units.

    Args:
        image_shape: `(H, W, C)`, pixels in [0, 1].
        latent_dim: int. Defaults to 10.
        hidden_units: int. Defaults to 128.
        seed: int seed of the reparameterised draws.

    `encode(images)` returns `(mean, std)` of `q(z | x)`, each
    `(batch, latent_dim)`: the probe's features. Metric `loss` is the
    negative bound per image in nats.

    Examples:

        >>> vae = VariationalAutoencoder((28, 28, 1), latent_dim=2)
        >>> mean, std = vae.encode(np.zeros((3, 28, 28, 1)))
        >>> tuple(mean.shape), tuple(std.shape)
        ((3, 2), (3, 2))
    """

    def __init__(
        self,
        image_shape=(28, 28, 1),
        latent_dim=10,
        hidden_units=128,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.image_shape = tuple(image_shape)
        self.latent_dim = latent_dim
        self.hidden_units = hidden_units
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.encoder_hidden = keras.layers.Dense(hidden_units, "relu")
        self.encoder_out = keras.layers.Dense(2 * latent_dim)
        self.decoder_hidden = keras.layers.Dense(hidden_units, "relu")
        self.decoder_out = keras.layers.Dense(int(np.prod(image_shape)))

    def build(self, input_shape=None):
        pixels = int(np.prod(self.image_shape))
        self.encoder_hidden.build((None, pixels))
        self.encoder_out.build((None, self.hidden_units))
        self.decoder_hidden.build((None, self.latent_dim))
        self.decoder_out.build((None, self.hidden_units))

    def encode(self, images):
        flat = ops.reshape(
            ops.cast(images, "float32"), (ops.shape(images)[0], -1)
        )
        # The bound in float32: half-precision log-densities lose digits.
        parameters = ops.cast(
            self.encoder_out(self.encoder_hidden(flat)), "float32"
        )
        mean = parameters[:, : self.latent_dim]
        std = ops.softplus(parameters[:, self.latent_dim :]) + 1e-4
        return mean, std

    def decode_logits(self, latents):
        return self.decoder_out(self.decoder_hidden(latents))

    def call(self, images):
        mean, _ = self.encode(images)
        logits = self.decode_logits(mean)
        return ops.reshape(
            ops.sigmoid(logits), (ops.shape(images)[0], *self.image_shape)
        )

    def negative_elbo(self, images):
        """The negative bound per image, `(batch,)`."""
        mean, std = self.encode(images)
        noise = keras.random.normal(ops.shape(mean), seed=self.seed_generator)
        logits = ops.cast(self.decode_logits(mean + std * noise), "float32")
        targets = ops.reshape(
            ops.cast(images, "float32"), (ops.shape(images)[0], -1)
        )
        reconstruction = ops.sum(
            ops.binary_crossentropy(targets, logits, from_logits=True), -1
        )
        kl = 0.5 * ops.sum(mean**2 + std**2 - 1.0 - 2.0 * ops.log(std), axis=-1)
        return reconstruction + kl

    def make_train_function(self, force=False):
        # Weights and optimizer made before the trace: traced once, not
        # twice (`gradient_step.build_optimizer`).
        if not self.built:
            with self.distribute_strategy.scope():
                self.build()
        gradient_step.build_optimizer(self)
        return super().make_train_function(force)

    def train_step(self, data):
        images = data[0] if isinstance(data, (tuple, list)) else data
        with tf.GradientTape() as tape:
            loss = ops.mean(self.negative_elbo(images))
            replica_loss = gradient_step.replica_share(loss)
        gradient_step.minimize(self, tape, replica_loss)
        return self._report(loss)

    def test_step(self, data):
        images = data[0] if isinstance(data, (tuple, list)) else data
        return self._report(ops.mean(self.negative_elbo(images)))

    def _report(self, loss):
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
        return {metric.name: metric.result() for metric in self.metrics}

    def get_config(self):
        return {
            **super().get_config(),
            "image_shape": self.image_shape,
            "latent_dim": self.latent_dim,
            "hidden_units": self.hidden_units,
            "seed": self.seed,
        }
