"""A Keras model that trains the generative capsule model by its bound."""

import keras
import tensorflow as tf  # the training step differentiates with a tape
from keras import ops

from keras_capsules import distributions
from keras_capsules import layers as capsule_layers
from keras_capsules.models import generative_capsules
from keras_capsules.models.generative_capsule_config import (
    SINGLE_PARENT,
    GenerativeCapsuleConfig,
)
from keras_capsules.recipes import gradient_step

# Pose posterior stds are kept above this (Gaussian poses).
MIN_POSE_POSTERIOR_SCALE = 1e-3

# The settings configs of earlier releases gave as separate arguments.
_INFERENCE_FIELDS = (
    "pose_posterior",
    "top_pose_refinement_steps",
    "top_presence_refinement_steps",
    "top_posterior_family",
    "single_parent_balance_temperature",
)
# Training options of earlier releases, removed as the measurements of
# research/generative_capsules_top_layer.md found they did not help.
_REMOVED_TRAINING_OPTIONS = (
    "top_kl_warmup_steps",
    "stop_gradient_between_layers",
    "presence_information_weight",
    "selection_information_weight",
    "template_presence_information_weight",
    "template_count_weight",
    "template_count_target",
    "binary_top_presence_draws",
)

BOUND_TERMS = ("elbo", "reconstruction", "template_kl", "top_kl")
# Metric names of `distributions.layer_information` of the top layer.
TOP_LAYER_MEASURES = {
    "top_information": "information",
    "top_presence_information": "presence_information",
    "top_pose_magnitude": "pose_magnitude",
    "top_presence_spread": "presence_spread",
}


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
            pose posterior and how the top layer is inferred. The decoder
            and the encoders must have its sizes
            (`generative_capsule_autoencoder` builds them so); None takes
            the decoder's, with the paper's inference. With
            `top_pose_refinement_steps` the top layer's poses start where
            the top encoder puts them and take that many EM steps toward
            the poses that best explain the template poses under eq. 5 and
            the prior (`distributions.refine_parent_poses`), in training,
            evaluation and `encode`; the bound stays a bound (with delta
            poses the poses are variational parameters). With
            `top_presence_refinement_steps` the presences then take that
            many mean-field steps (`distributions.parent_presence_logits`).
            With `top_posterior_family="single_parent"` exactly one top
            capsule is present (`distributions.SingleParentPosterior`): for
            each parent alone its pose by the EM steps from the encoder's,
            `q(t^0 = e_i)` the softmax of the log joints (the exact
            posterior within the family), the bound
            (`distributions.single_parent_elbo`) summed over the `n0`
            events exactly; in training each batch's posterior is balanced
            across the parents at `single_parent_balance_temperature`
            (`distributions.balanced_assignments`), which keeps one parent
            from taking every digit.
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
        self.config = _settings_of(decoder, {}) if config is None else config
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.trackers = {
            name: keras.metrics.Mean(name=name)
            for name in (*BOUND_TERMS, *TOP_LAYER_MEASURES, "top_explained")
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
    def pose_posterior(self):
        return self.config.pose_posterior

    @property
    def top_pose_refinement_steps(self):
        return self.config.top_pose_refinement_steps

    @property
    def top_presence_refinement_steps(self):
        return self.config.top_presence_refinement_steps

    @property
    def top_posterior_family(self):
        return self.config.top_posterior_family

    @property
    def single_parent_balance_temperature(self):
        return float(self.config.single_parent_balance_temperature)

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
        """The top layer's `CapsulePosterior` from `(batch, n0, p)`
        parameters, its poses (then presences) computed from `templates`
        (a template-layer event) when `top_pose_refinement_steps`
        (`top_presence_refinement_steps`) > 0; or, with
        `top_posterior_family="single_parent"`, the
        `SingleParentPosterior` whose poses start at the parameters'
        (balanced in `training`, see `single_parent_balance_temperature`)."""
        if self.top_posterior_family == SINGLE_PARENT:
            return self.single_parent_posterior(
                self.posterior_from_parameters(parameters).pose_means,
                templates,
                training,
            )
        posterior = self.posterior_from_parameters(parameters)
        if not (
            self.top_pose_refinement_steps or self.top_presence_refinement_steps
        ):
            return posterior
        model = self.decoder.generative_model()
        if self.top_pose_refinement_steps:
            posterior.pose_means = distributions.refine_parent_poses(
                model,
                posterior.mode(),
                templates,
                self.top_pose_refinement_steps,
            )
        for _ in range(self.top_presence_refinement_steps):
            posterior.presence_logits = distributions.parent_presence_logits(
                model,
                ops.sigmoid(posterior.presence_logits),
                posterior.pose_means,
                templates,
            )
        return posterior

    def single_parent_posterior(self, start_poses, templates, training):
        """The `SingleParentPosterior` of a template-layer event, the
        parents' poses by `top_pose_refinement_steps` EM steps from
        `start_poses` `(batch, n0, 6)`; its probabilities are constants
        (the bound's gradient in them is 0 at the exact posterior)."""
        scores, poses = distributions.single_parent_choices(
            self.decoder.generative_model(),
            start_poses,
            templates,
            self.top_pose_refinement_steps,
        )
        scores = tf.stop_gradient(scores)
        if training and self.single_parent_balance_temperature:
            log_probabilities = distributions.balanced_assignments(
                scores, self.single_parent_balance_temperature
            )
        else:
            log_probabilities = tf.nn.log_softmax(scores)
        return distributions.SingleParentPosterior(
            log_probabilities, poses, self.decoder.temperature
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
        if self.top_posterior_family == SINGLE_PARENT:
            return distributions.single_parent_elbo(*arguments, **options)
        return distributions.capsule_elbo(*arguments, **options)

    def _update_trackers(self, terms):
        for name in BOUND_TERMS:
            self.trackers[name].update_state(terms[name])
        top = terms["top_posterior"]
        measures = distributions.layer_information(
            top.presence_logits, top.pose_means
        )
        for name, key in TOP_LAYER_MEASURES.items():
            self.trackers[name].update_state(measures[key])
        self.trackers["top_explained"].update_state(
            distributions.explained_by_parents(
                self.decoder.generative_model(), top.mode(), terms["templates"]
            )
        )

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
            fields = {
                name: config.pop(name)
                for name in _INFERENCE_FIELDS
                if name in config
            }
            for name in _REMOVED_TRAINING_OPTIONS:
                config.pop(name, None)
            config["config"] = _settings_of(config["decoder"], fields)
        return cls(**config)


def _settings_of(decoder, fields):
    """The `GenerativeCapsuleConfig` of a decoder and inference `fields`
    (from a config of an earlier release)."""
    return GenerativeCapsuleConfig(
        num_top_capsules=decoder.num_top_capsules,
        num_template_capsules=decoder.num_template_capsules,
        template_size=decoder.template_size,
        pixel_scale=decoder.pixel_scale,
        min_pose_scale=decoder.min_pose_scale,
        initial_pose_scale=decoder.initial_pose_scale,
        clutter_affinity=decoder.clutter_affinity,
        clutter_pose_scale=decoder.clutter_pose_scale,
        off_pose_scale=decoder.off_pose_scale,
        **fields,
    )


def generative_capsule_autoencoder(
    image_shape=(28, 28, 1), config=None, seed=None
):
    """A built `GenerativeCapsuleAutoencoder` of the paper's architecture
    (section 4, supplementary B) with `config`'s sizes and inference.

    Args:
        image_shape: `(H, W, C)` of the images.
        config: a `GenerativeCapsuleConfig`, the name of one of its presets
            (`GenerativeCapsuleConfig.PRESETS`: `"paper"`,
            `"computed_top_poses"`, `"single_parent"`,
            `"computed_presences_32"`) or None for the paper's.
        seed: int seed of the bound's Monte Carlo draws.

    Example:

    >>> model = generative_capsule_autoencoder(
    ...     (28, 28, 1), GenerativeCapsuleConfig(num_top_capsules=4))
    >>> model(np.zeros((2, 28, 28, 1))).shape
    TensorShape([2, 28, 28, 1])
    """
    config = GenerativeCapsuleConfig.get(config)
    decoder = capsule_layers.GenerativeCapsuleDecoder(
        num_top_capsules=config.num_top_capsules,
        num_template_capsules=config.num_template_capsules,
        template_size=config.template_size,
        image_shape=image_shape,
        pixel_scale=config.pixel_scale,
        min_pose_scale=config.min_pose_scale,
        initial_pose_scale=config.initial_pose_scale,
        clutter_affinity=config.clutter_affinity,
        clutter_pose_scale=config.clutter_pose_scale,
        off_pose_scale=config.off_pose_scale,
    )
    decoder.build()
    model = GenerativeCapsuleAutoencoder(
        decoder,
        generative_capsules.template_encoder(
            image_shape,
            config.num_template_capsules,
            channels=config.template_channels,
            pose_posterior=config.pose_posterior,
        ),
        generative_capsules.top_encoder(
            config.num_template_capsules,
            config.num_top_capsules,
            pose_posterior=config.pose_posterior,
        ),
        config=config,
        seed=seed,
    )
    model.build((None, *image_shape))
    # A symbolic call (no computation) records the input signature, so
    # `model.export` works before any real call.
    model(keras.KerasTensor((None, *image_shape)))
    return model
