"""A Keras model that trains the generative capsule model by its bound."""

import keras
import tensorflow as tf  # the training step differentiates with a tape
from keras import ops

from keras_capsules import distributions
from keras_capsules.models import generative_capsule_posteriors as posteriors
from keras_capsules.models import posterior_measures
from keras_capsules.models.generative_capsule_config import (
    SINGLE_PARENT,
    GenerativeCapsuleConfig,
)
from keras_capsules.recipes import gradient_step


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
        config: a `GenerativeCapsuleConfig` (or a preset's name): the
            pose posterior and how the top layer is inferred, in training,
            evaluation and `encode`
            (`generative_capsule_posteriors.top_posterior`). The decoder
            and the encoders must have its sizes
            (`generative_capsule_autoencoder` builds them so); None takes
            the decoder's, with the paper's inference.
        seed: int seed of the bound's Monte Carlo draws.
        **kwargs: `keras.Model` arguments.

    Metrics: `loss` (the negative bound per image, in nats), `elbo`,
    `reconstruction`, `template_kl` and `top_kl`; and what the top layer
    carries (`distributions.layer_information`): `top_information` and
    its part `top_presence_information` in nats per image,
    `top_pose_magnitude` (mean `|A^0|`) and `top_presence_spread` (std of
    `q(t^0 = 1)` across images); and `top_explained`
    (`distributions.explained_by_parents` at the top posterior's mode:
    what the top layer's image-specific state adds to
    `log p(t^1, A^1 | t^0, A^0)`). The last five are computed over each
    batch and averaged over batches.

    Examples:

        >>> from keras_capsules.models import generative_capsule_autoencoder
        >>> model = generative_capsule_autoencoder(
        ...     (28, 28, 1), GenerativeCapsuleConfig(num_top_capsules=4))
        >>> latents = model.encode(np.zeros((2, 28, 28, 1)))
        >>> tuple(latents["top_poses"].shape)
        (2, 4, 6)
    """

    def __init__(
        self,
        decoder,
        template_encoder,
        top_encoder,
        config=None,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.decoder = decoder
        self.template_encoder = template_encoder
        self.top_encoder = top_encoder
        # None: the decoder's sizes and scales, the paper's inference.
        self.config = (
            GenerativeCapsuleConfig.of_decoder(decoder)
            if config is None
            else config
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.trackers = {
            name: keras.metrics.Mean(name=name)
            for name in posterior_measures.TRAINING_MEASURES
        }

    @property
    def config(self):
        """The `GenerativeCapsuleConfig`. Setting another changes how the
        top layer is inferred (its sizes must stay the decoder's), e.g.
        a trained model's: `model.config =
        model.config.replace(top_pose_refinement_steps=3)`."""
        return self._config

    @config.setter
    def config(self, config):
        config = GenerativeCapsuleConfig.get(config)
        for name in ("num_top_capsules", "num_template_capsules"):
            if getattr(config, name) != getattr(self.decoder, name):
                raise ValueError(
                    f"`GenerativeCapsuleAutoencoder`'s config has {name}="
                    f"{getattr(config, name)}, its decoder "
                    f"{getattr(self.decoder, name)}. Change only the "
                    "inference fields of a built model's config, or build "
                    "the model with `generative_capsule_autoencoder`."
                )
        self._config = config

    @property
    def metrics(self):
        return [*super().metrics, *self.trackers.values()]

    # Variational posteriors -------------------------------------------

    def posterior_from_parameters(self, parameters):
        """A `CapsulePosterior` from `(batch, n, p)` encoder outputs."""
        return posteriors.from_parameters(
            parameters, self.config.pose_posterior, self.decoder.temperature
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
        return posteriors.template_capsules(templates)

    def top_posterior(self, templates, training=False):
        """`q(t^0, A^0 | t^1, A^1)` of a template-layer event (poses
        refined, see `top_pose_refinement_steps`; single parent, see
        `top_posterior_family`)."""
        return self.top_posterior_from_parameters(
            self.top_encoder(
                self.template_capsules(templates), training=training
            ),
            templates,
            training,
        )

    def top_posterior_from_parameters(
        self, parameters, templates, training=False
    ):
        """The top layer's posterior from `(batch, n0, p)` parameters and
        `templates` (a template-layer event), as `config` says
        (`posteriors.top_posterior`)."""
        return posteriors.top_posterior(
            self.decoder, self.config, parameters, templates, training
        )

    # The bound ---------------------------------------------------------

    def elbo_terms(self, images, seed=None, training=False):
        """One-sample estimate of the bound and its terms, `(batch,)` each
        (see `distributions.capsule_elbo`). Under a strategy with several
        replicas, each draws its rows of the noise of the global batch,
        so that the replicas draw what one process draws."""
        if seed is None:
            seed = keras.random.randint(
                (2,), 0, 2**30, seed=self.seed_generator, dtype="int32"
            )
        return self.bound(
            ops.cast(images, "float32"),
            self.template_posterior(images, training=training),
            lambda templates: self.top_posterior(templates, training),
            seed,
            rows=gradient_step.replica_rows(tf.shape(images)[0]),
        )

    def bound(
        self, images, template_posterior, top_posterior_fn, seed, **options
    ):
        """The bound this model trains on, from given posteriors:
        `distributions.capsule_elbo` (the paper's relaxed one), or
        `distributions.single_parent_elbo` with
        `top_posterior_family="single_parent"`; `options` go to either."""
        arguments = (
            self.decoder.generative_model(),
            images,
            template_posterior,
            top_posterior_fn,
            seed,
        )
        if self.config.top_posterior_family == SINGLE_PARENT:
            return distributions.single_parent_elbo(*arguments, **options)
        return distributions.capsule_elbo(*arguments, **options)

    def _update_trackers(self, terms):
        measures = posterior_measures.training_measures(
            self.decoder.generative_model(), terms
        )
        for name, value in measures.items():
            self.trackers[name].update_state(value)

    def make_train_function(self, force=False):
        # The step takes seconds to trace; trace it once, not twice.
        gradient_step.build_optimizer(self)
        return super().make_train_function(force)

    def train_step(self, data):
        images = data[0] if isinstance(data, (tuple, list)) else data
        with tf.GradientTape() as tape:
            terms = self.elbo_terms(images, training=True)
            loss = -ops.mean(terms["elbo"])
            replica_loss = gradient_step.replica_share(loss)
        gradient_step.minimize(self, tape, replica_loss)
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
            "config": self.config.get_config(),
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        """The model of `config`. Configs of earlier releases gave the
        inference settings as separate arguments (now `config`'s), and
        training-only options since removed (their measurements:
        research/README.md), which no prediction depended on."""
        config = dict(config)
        for key in ("decoder", "template_encoder", "top_encoder"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        if "config" not in config:
            config["config"] = GenerativeCapsuleConfig.from_former_config(
                config, config["decoder"]
            )
        return cls(**config)
