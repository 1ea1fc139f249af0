"""A Keras model that trains the generative capsule model by its bound."""

import keras
import tensorflow as tf  # the training step differentiates with a tape
from keras import ops

from keras_capsules import distributions
from keras_capsules import layers as capsule_layers
from keras_capsules.models import (
    generative_capsule_settings,
    generative_capsules,
)
from keras_capsules.models.posterior_measures import (
    expected_presence_count,
    presence_information,
    selection_information,
)
from keras_capsules.recipes import gradient_step

# Pose posterior stds are kept above this (Gaussian poses).
MIN_POSE_POSTERIOR_SCALE = 1e-3

# `top_posterior_family` (`generative_capsule_settings`).
MEAN_FIELD = generative_capsule_settings.MEAN_FIELD
SINGLE_PARENT = generative_capsule_settings.SINGLE_PARENT
TOP_POSTERIOR_FAMILIES = generative_capsule_settings.TOP_POSTERIOR_FAMILIES

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
        pose_posterior: `"delta"` (the paper's default) or `"gaussian"`.
        top_kl_warmup_steps: int; training weighs the top layer's KL term
            by `min(1, step / top_kl_warmup_steps)`, so that early in
            training the top layer is free to encode what the template
            layer needs before it pays for it (KL annealing; Bowman et
            al., 2016). 0 (the default) trains the bound throughout.
            Reported metrics are always the unweighted bound.
        stop_gradient_between_layers: bool, see `capsule_elbo`.
            Defaults to False (the paper's single objective).
        presence_information_weight: float >= 0; training adds this
            multiple of the top layer's presence information over each
            batch (`distributions.layer_information`: the mutual
            information between image and top presences) to the bound.
            It asks every image for confident presences and the images
            for different ones: the within- and between-example sparsity
            pressures of stacked capsule autoencoders (Kosiorek et al.,
            2019) in one term. 0 (the default) trains the bound alone.
        selection_information_weight: float >= 0; training adds this
            multiple of the information between the image and the parent
            that explains a template, over each batch
            (`selection_information`): low entropy of the parents'
            shares of an image's templates, high entropy of their shares
            over the batch (the posterior sparsity of Kosiorek et al.,
            2019, on the selection posterior of eq. 9). 0 (the default)
            trains the bound alone.
        template_presence_information_weight: float >= 0; training adds
            this multiple of the template layer's presence information
            over each batch (`distributions.layer_information` of
            `q(t^1 | X)`): confident template presences that differ
            between images, so that which templates make up a digit can
            tell its parent (through `gamma_ij`, eq. 4). 0 (the default)
            trains the bound alone.
        template_count_weight: float >= 0; training subtracts this
            multiple of `(sum_j q(t^1_j = 1 | X) - template_count_target)^2`
            per image from the bound: each image is drawn with about
            `template_count_target` templates (the within-example
            sparsity of Kosiorek et al., 2019, on the template layer), so
            that which templates it uses depends on its shape. 0 (the
            default) trains the bound alone.
        template_count_target: float in (0, n1], the number of templates
            per image `template_count_weight` asks for; required when that
            weight is > 0.
        top_pose_refinement_steps: int >= 0; the top layer's poses start
            where the top encoder puts them and take this many EM steps
            toward the poses that best explain the template poses under
            eq. 5 and the prior (`distributions.refine_parent_poses`), in
            training, evaluation and `encode`. The bound stays a bound
            (with delta poses the poses are variational parameters). 0
            (the default, the paper's amortised encoder) uses the
            encoder's poses.
        top_presence_refinement_steps: int >= 0; after the pose steps,
            the top layer's presences take this many mean-field steps
            (`distributions.parent_presence_logits`): each parent's logit
            becomes the prior's plus what switching it on rather than off
            adds to `log p(t^1, A^1 | t^0, A^0)`, the other parents at
            their current presences. 0 (the default) uses the encoder's
            presences.
        binary_top_presence_draws: int >= 0; > 0 trains and evaluates
            the bound of the model with Bernoulli top-layer presences, as
            eq. 1 writes them (`distributions.binary_top_elbo`): a parent
            is in a template's mixture (eq. 3) or out of it, not scaled
            by a relaxed presence. Its expectation over the presences is
            the mean of this many draws per image, and its gradient in
            the presence logits a score-function estimate. 0 (the
            default) trains the paper's Concrete-relaxed bound.
        top_posterior_family: `"mean_field"` (the default, the paper's
            `q(t^0, A^0)`: each top capsule present or not on its own) or
            `"single_parent"`: exactly one top capsule is present, as if
            each image showed one object
            (`distributions.SingleParentPosterior`). Its posterior is
            computed, not predicted: for each parent alone, its pose by
            `top_pose_refinement_steps` EM steps from the top encoder's
            pose (`distributions.single_parent_choices`), and
            `q(t^0 = e_i)` the softmax of the log joints, the exact
            posterior within the family; the top encoder's presences are
            not used. The bound (`distributions.single_parent_elbo`) sums
            over the `n0` events exactly, top presences Bernoulli. Needs
            delta poses, and no presence steps, draws or information
            weights.
        single_parent_balance_temperature: float >= 0, with
            `top_posterior_family="single_parent"`: in training, each
            batch's posterior is replaced by the assignment closest to
            the softmax of `log joint / temperature` that gives every
            parent an equal share of the batch
            (`distributions.balanced_assignments`; per replica under a
            strategy). It is still a posterior of the family, so the
            bound stays a bound. Unbalanced, the parent that fits most
            digits best is trained on them and soon fits every digit
            best (one parent took every MNIST test digit after 2 epochs of
            the hard choice of `research.class_parents`;
            research/generative_capsules.md, "Is the top layer used?").
            Evaluation, `encode` and test-time
            inference use the exact posterior. 0 (the default): the
            exact posterior in training too.
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
        pose_posterior="delta",
        top_kl_warmup_steps=0,
        stop_gradient_between_layers=False,
        presence_information_weight=0.0,
        selection_information_weight=0.0,
        top_pose_refinement_steps=0,
        top_presence_refinement_steps=0,
        template_presence_information_weight=0.0,
        template_count_weight=0.0,
        template_count_target=None,
        binary_top_presence_draws=0,
        top_posterior_family=MEAN_FIELD,
        single_parent_balance_temperature=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        generative_capsule_settings.check_settings(
            decoder.num_template_capsules,
            pose_posterior=pose_posterior,
            top_kl_warmup_steps=top_kl_warmup_steps,
            presence_information_weight=presence_information_weight,
            selection_information_weight=selection_information_weight,
            top_pose_refinement_steps=top_pose_refinement_steps,
            top_presence_refinement_steps=top_presence_refinement_steps,
            template_presence_information_weight=(
                template_presence_information_weight
            ),
            template_count_weight=template_count_weight,
            template_count_target=template_count_target,
            binary_top_presence_draws=binary_top_presence_draws,
            top_posterior_family=top_posterior_family,
            single_parent_balance_temperature=single_parent_balance_temperature,
        )
        self.decoder = decoder
        self.template_encoder = template_encoder
        self.top_encoder = top_encoder
        self.pose_posterior = pose_posterior
        self.top_kl_warmup_steps = int(top_kl_warmup_steps)
        self.stop_gradient_between_layers = bool(stop_gradient_between_layers)
        self.presence_information_weight = float(presence_information_weight)
        self.selection_information_weight = float(selection_information_weight)
        self.top_pose_refinement_steps = int(top_pose_refinement_steps)
        self.top_presence_refinement_steps = int(top_presence_refinement_steps)
        self.template_presence_information_weight = float(
            template_presence_information_weight
        )
        self.binary_top_presence_draws = int(binary_top_presence_draws)
        self.top_posterior_family = top_posterior_family
        self.single_parent_balance_temperature = float(
            single_parent_balance_temperature
        )
        self.template_count_weight = float(template_count_weight)
        self.template_count_target = (
            None
            if template_count_target is None
            else float(template_count_target)
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.trackers = {
            name: keras.metrics.Mean(name=name)
            for name in (*BOUND_TERMS, *TOP_LAYER_MEASURES, "top_explained")
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
            stop_gradient_between_layers=self.stop_gradient_between_layers,
            rows=gradient_step.replica_rows(tf.shape(images)[0]),
        )

    def bound(
        self, images, template_posterior, top_posterior_fn, seed, **options
    ):
        """The bound this model trains on, from given posteriors:
        `distributions.capsule_elbo` (the paper's relaxed one),
        `distributions.binary_top_elbo` when `binary_top_presence_draws`
        > 0, or `distributions.single_parent_elbo` with
        `top_posterior_family="single_parent"`; `options` go to any."""
        arguments = (
            self.decoder.generative_model(),
            images,
            template_posterior,
            top_posterior_fn,
            seed,
        )
        if self.top_posterior_family == SINGLE_PARENT:
            return distributions.single_parent_elbo(*arguments, **options)
        if self.binary_top_presence_draws:
            return distributions.binary_top_elbo(
                *arguments, num_draws=self.binary_top_presence_draws, **options
            )
        return distributions.capsule_elbo(*arguments, **options)

    def top_kl_weight(self):
        """The weight of the top layer's KL term in the training loss."""
        if not self.top_kl_warmup_steps:
            return 1.0
        step = ops.cast(self.optimizer.iterations, "float32")
        return ops.minimum(1.0, step / float(self.top_kl_warmup_steps))

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
            objective = -ops.mean(
                terms["reconstruction"]
                - terms["template_kl"]
                - self.top_kl_weight() * terms["top_kl"]
            )
            for weight, posterior in (
                (self.presence_information_weight, terms["top_posterior"]),
                (
                    self.template_presence_information_weight,
                    terms["template_posterior"],
                ),
            ):
                if weight:
                    objective -= weight * presence_information(posterior)
            if self.template_count_weight:
                objective += self.template_count_weight * ops.mean(
                    ops.square(
                        expected_presence_count(terms["template_posterior"])
                        - self.template_count_target
                    )
                )
            if self.selection_information_weight:
                conditional = self.decoder.generative_model()
                selections = conditional.template_conditional(
                    terms["top"]
                ).selection_posterior(terms["templates"])
                objective -= self.selection_information_weight * (
                    selection_information(selections)
                )
            replica_loss = gradient_step.replica_share(objective)
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
            "pose_posterior": self.pose_posterior,
            "top_kl_warmup_steps": self.top_kl_warmup_steps,
            "stop_gradient_between_layers": self.stop_gradient_between_layers,
            "presence_information_weight": self.presence_information_weight,
            "selection_information_weight": self.selection_information_weight,
            "top_pose_refinement_steps": self.top_pose_refinement_steps,
            "top_presence_refinement_steps": (
                self.top_presence_refinement_steps
            ),
            "template_presence_information_weight": (
                self.template_presence_information_weight
            ),
            "template_count_weight": self.template_count_weight,
            "template_count_target": self.template_count_target,
            "binary_top_presence_draws": self.binary_top_presence_draws,
            "top_posterior_family": self.top_posterior_family,
            "single_parent_balance_temperature": (
                self.single_parent_balance_temperature
            ),
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("decoder", "template_encoder", "top_encoder"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def generative_capsule_autoencoder(
    image_shape=(28, 28, 1),
    num_top_capsules=16,
    num_template_capsules=16,
    template_size=12,
    pose_posterior="delta",
    template_channels=32,
    coordinate_channels=False,
    normalize_top_encoder_inputs=False,
    top_kl_warmup_steps=0,
    stop_gradient_between_layers=False,
    presence_information_weight=0.0,
    selection_information_weight=0.0,
    top_pose_refinement_steps=0,
    top_presence_refinement_steps=0,
    template_presence_information_weight=0.0,
    template_count_weight=0.0,
    template_count_target=None,
    binary_top_presence_draws=0,
    top_posterior_family=MEAN_FIELD,
    single_parent_balance_temperature=0.0,
    seed=None,
    **decoder_kwargs,
):
    """The paper's configuration (section 4, supplementary B) as a built
    `GenerativeCapsuleAutoencoder`.

    `template_channels` and `coordinate_channels` go to
    `generative_capsules.template_encoder`; `normalize_top_encoder_inputs`
    to `generative_capsules.top_encoder` (as `normalize_inputs`);
    `top_kl_warmup_steps`, `stop_gradient_between_layers`, the
    information weights, the template count, the refinement steps and
    `binary_top_presence_draws`, `top_posterior_family` and
    `single_parent_balance_temperature` to the model; `decoder_kwargs` to
    `GenerativeCapsuleDecoder` (template size, pixel noise, temperature,
    ...)."""
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
            image_shape,
            num_template_capsules,
            channels=template_channels,
            pose_posterior=pose_posterior,
            coordinate_channels=coordinate_channels,
        ),
        generative_capsules.top_encoder(
            num_template_capsules,
            num_top_capsules,
            pose_posterior=pose_posterior,
            normalize_inputs=normalize_top_encoder_inputs,
        ),
        pose_posterior=pose_posterior,
        top_kl_warmup_steps=top_kl_warmup_steps,
        stop_gradient_between_layers=stop_gradient_between_layers,
        presence_information_weight=presence_information_weight,
        selection_information_weight=selection_information_weight,
        top_pose_refinement_steps=top_pose_refinement_steps,
        top_presence_refinement_steps=top_presence_refinement_steps,
        template_presence_information_weight=(
            template_presence_information_weight
        ),
        template_count_weight=template_count_weight,
        template_count_target=template_count_target,
        binary_top_presence_draws=binary_top_presence_draws,
        top_posterior_family=top_posterior_family,
        single_parent_balance_temperature=single_parent_balance_temperature,
        seed=seed,
    )
    model.build((None, *image_shape))
    # A symbolic call (no computation) records the input signature, so
    # `model.export` works before any real call.
    model(keras.KerasTensor((None, *image_shape)))
    return model
