"""A Keras model that trains the generative capsule model by its bound."""

import keras
import numpy as np
import tensorflow as tf  # the training step differentiates with a tape
from keras import ops

from keras_capsules import distributions
from keras_capsules import layers as capsule_layers
from keras_capsules.models import generative_capsules

# Pose posterior stds are kept above this (Gaussian poses).
MIN_POSE_POSTERIOR_SCALE = 1e-3


def _num_replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


@keras.saving.register_keras_serializable(package="keras_capsules")
class GenerativeCapsuleAutoencoder(keras.Model):
    """Amortised variational inference in the generative capsule model
    (Smith et al., 2020, sections 2.2-2.3).

    `fit` maximises a one-sample estimate of the bound (eq. 8) with the
    selections summed out, relaxed presences and delta (MAP) or Gaussian
    poses. Calling the model renders the images it infers (posterior
    modes); `encode` gives the latent variables used by the probes.

    Args:
        decoder: a `GenerativeCapsuleDecoder` (the generative parameters).
        template_encoder: images -> `(batch, n1, p)` parameters of
            `q(t^1, A^1 | X)` (see `generative_capsules.template_encoder`).
        top_encoder: `(batch, n1, 7)` template capsules -> `(batch, n0, p)`
            parameters of `q(t^0, A^0 | t^1, A^1)`.
        pose_posterior: `"delta"` (the paper's default) or `"gaussian"`.
        seed: int seed of the bound's Monte Carlo draws.
        **kwargs: `keras.Model` arguments.

    Metrics: `loss` (the negative bound per image, in nats), `elbo`,
    `reconstruction`, `template_kl` and `top_kl`.
    """

    def __init__(
        self,
        decoder,
        template_encoder,
        top_encoder,
        pose_posterior="delta",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if pose_posterior not in generative_capsules.POSE_POSTERIORS:
            raise ValueError(
                "`GenerativeCapsuleAutoencoder` expects `pose_posterior` in "
                f"{generative_capsules.POSE_POSTERIORS}. Received: "
                f"{pose_posterior!r}."
            )
        self.decoder = decoder
        self.template_encoder = template_encoder
        self.top_encoder = top_encoder
        self.pose_posterior = pose_posterior
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.trackers = {
            name: keras.metrics.Mean(name=name)
            for name in ("elbo", "reconstruction", "template_kl", "top_kl")
        }

    @property
    def metrics(self):
        return [*super().metrics, *self.trackers.values()]

    # Variational posteriors -------------------------------------------

    def posterior_from_parameters(self, parameters):
        """A `CapsulePosterior` from `(batch, n, p)` encoder outputs."""
        parameters = ops.cast(parameters, "float32")
        pose_dim = distributions.POSE_DIM
        pose_scales = None
        if self.pose_posterior == "gaussian":
            pose_scales = MIN_POSE_POSTERIOR_SCALE + ops.softplus(
                parameters[..., 1 + pose_dim :]
            )
        return distributions.CapsulePosterior(
            presence_logits=parameters[..., 0],
            pose_means=parameters[..., 1 : 1 + pose_dim],
            pose_scales=pose_scales,
            temperature=self.decoder.temperature,
        )

    def template_posterior(self, images, training=False):
        """`q(t^1, A^1 | X)`."""
        return self.posterior_from_parameters(
            self.template_encoder(images, training=training)
        )

    @staticmethod
    def template_capsules(templates):
        """The top encoder's input, `(batch, n1, 7)`: each template's
        presence and pose, from a template-layer event."""
        presences = ops.sigmoid(templates["presence_logit"])
        return ops.concatenate([presences[..., None], templates["pose"]], -1)

    def top_posterior(self, templates, training=False):
        """`q(t^0, A^0 | t^1, A^1)` of a template-layer event."""
        return self.posterior_from_parameters(
            self.top_encoder(
                self.template_capsules(templates), training=training
            )
        )

    # The bound ---------------------------------------------------------

    def elbo_terms(self, images, seed=None, training=False):
        """One-sample estimate of the bound and its terms, `(batch,)` each
        (see `distributions.capsule_elbo`)."""
        if seed is None:
            seed = keras.random.randint(
                (2,), 0, 2**30, seed=self.seed_generator, dtype="int32"
            )
        return distributions.capsule_elbo(
            self.decoder.generative_model(),
            ops.cast(images, "float32"),
            self.template_posterior(images, training=training),
            lambda templates: self.top_posterior(templates, training),
            seed,
        )

    def _update_trackers(self, terms):
        for name, tracker in self.trackers.items():
            tracker.update_state(terms[name])

    def train_step(self, data):
        images = data[0] if isinstance(data, (tuple, list)) else data
        with tf.GradientTape() as tape:
            terms = self.elbo_terms(images, training=True)
            loss = -ops.mean(terms["elbo"])
            # Replicas' gradients are summed: each takes its share.
            replica_loss = loss / _num_replicas()
        gradients = tape.gradient(replica_loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return self._report(loss, terms)

    def test_step(self, data):
        images = data[0] if isinstance(data, (tuple, list)) else data
        terms = self.elbo_terms(images)
        return self._report(-ops.mean(terms["elbo"]), terms)

    def _report(self, loss, terms):
        self._update_trackers(terms)
        for metric in super().metrics:
            if metric.name == "loss":
                metric.update_state(loss)
        return {metric.name: metric.result() for metric in self.metrics}

    # Inference -----------------------------------------------------------

    def encode(self, images):
        """Posterior modes of both layers, a dict of tensors:
        `template_presences` `(batch, n1)`, `template_poses`
        `(batch, n1, 6)`, `top_presence_logits` `(batch, n0)` (the logits
        of `q(t^0 = 1)`) and `top_poses` `(batch, n0, 6)`."""
        template_posterior = self.template_posterior(images)
        top_posterior = self.top_posterior(template_posterior.mode())
        return self.latents(template_posterior, top_posterior)

    @staticmethod
    def latents(template_posterior, top_posterior):
        """The latent variables `encode` returns, from the two layers'
        posteriors (their modes; the top layer's presence as logits)."""
        templates = template_posterior.mode()
        return {
            "template_presences": ops.sigmoid(templates["presence_logit"]),
            "template_poses": templates["pose"],
            "top_presence_logits": top_posterior.presence_logits,
            "top_poses": top_posterior.pose_means,
        }

    def call(self, images, training=False):
        """Renders the template capsules inferred from `images`."""
        template_posterior = self.template_posterior(images, training)
        templates = template_posterior.mode()
        return self.decoder(
            [ops.sigmoid(templates["presence_logit"]), templates["pose"]]
        )

    def get_config(self):
        return {
            **super().get_config(),
            "decoder": keras.saving.serialize_keras_object(self.decoder),
            "template_encoder": keras.saving.serialize_keras_object(
                self.template_encoder
            ),
            "top_encoder": keras.saving.serialize_keras_object(
                self.top_encoder
            ),
            "pose_posterior": self.pose_posterior,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("decoder", "template_encoder", "top_encoder"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def top_layer_features(latents):
    """Probe features of `encode`'s latents (Smith et al., Table 1):
    `{"t0": (batch, n0) presence logits, "t0_A0": (batch, n0 * 7) those and
    the flattened poses}`, as NumPy arrays."""
    presences = np.asarray(latents["top_presence_logits"])
    poses = np.asarray(latents["top_poses"]).reshape(len(presences), -1)
    return {"t0": presences, "t0_A0": np.concatenate([presences, poses], 1)}


def generative_capsule_autoencoder(
    image_shape=(28, 28, 1),
    num_top_capsules=16,
    num_template_capsules=16,
    template_size=12,
    pose_posterior="delta",
    seed=None,
    **decoder_kwargs,
):
    """The paper's configuration (section 4, supplementary B) as a built
    `GenerativeCapsuleAutoencoder`; `decoder_kwargs` go to
    `GenerativeCapsuleDecoder` (pixel noise, temperature, ...)."""
    decoder = capsule_layers.GenerativeCapsuleDecoder(
        num_top_capsules=num_top_capsules,
        num_template_capsules=num_template_capsules,
        template_size=template_size,
        image_shape=image_shape,
        **decoder_kwargs,
    )
    decoder.build()
    model = GenerativeCapsuleAutoencoder(
        decoder,
        generative_capsules.template_encoder(
            image_shape, num_template_capsules, pose_posterior=pose_posterior
        ),
        generative_capsules.top_encoder(
            num_template_capsules,
            num_top_capsules,
            pose_posterior=pose_posterior,
        ),
        pose_posterior=pose_posterior,
        seed=seed,
    )
    model.build((None, *image_shape))
    return model
