"""Test-time ("free form") variational inference (Smith et al., 2.4)."""

import keras
import tensorflow as tf

from keras_capsules import distributions

REFINED_PARTS = ("template_presences", "template_poses", "top")
# Each optimizer's default step size, chosen on MNIST digits on a 40x40
# canvas (research/generative_capsules_runs.md, "What test-time inference
# changes in `t0`").
FREE_FORM_LEARNING_RATES = {"adam": 0.005, "gradient_ascent": 3e-5}
FREE_FORM_OPTIMIZERS = tuple(FREE_FORM_LEARNING_RATES)


def free_form_inference(autoencoder, images, **settings):
    """Optimises the variational parameters of given images by the bound.

    Rather than taking `q` from the encoders, every image gets its own
    variational parameters, initialised at the encoders' output, and
    `num_steps` steps of `optimizer` maximise the one-sample bound (eq. 8;
    the model's own, `GenerativeCapsuleAutoencoder.bound`) with the
    generative parameters held fixed. The selections stay summed
    out, so each step is one sweep of an EM algorithm (section 2.4). The
    defaults are the paper's: basic gradient ascent on free variational
    parameters. A model with `top_pose_refinement_steps`
    (`top_presence_refinement_steps`) starts its free top layer where those
    steps put it, from the encoders' templates; `recompute_top_layer`
    computes it from the refined templates at every step instead, as in
    training.

    Args:
        autoencoder: a trained `GenerativeCapsuleAutoencoder`.
        images: `(batch, H, W, C)`.
        **settings: `FreeFormInference`'s settings (`num_steps`,
            `learning_rate`, `seed`, `jit_compile`, `refined_parts`,
            `recompute_top_layer`, `optimizer`); the paper's by default.

    Returns:
        `(latents, elbo_history)`: latents as from `autoencoder.encode`
        (posterior modes), and the batch-mean bound before every step,
        `(num_steps,)`.

    Examples:

        >>> from keras_capsules.models import generative_capsule_autoencoder
        >>> model = generative_capsule_autoencoder((28, 28, 1), "paper")
        >>> latents, bounds = free_form_inference(
        ...     model, np.zeros((2, 28, 28, 1)), num_steps=3, jit_compile=False)
        >>> len(bounds), tuple(latents["top_poses"].shape)
        (3, (2, 16, 6))
    """
    return FreeFormInference(autoencoder, **settings)(images)


class FreeFormInference:
    """`free_form_inference` with fixed settings, for several batches of
    images: each batch shape's variational parameters, optimizer and
    compiled step are made by the first call and reused by later ones,
    so a step is traced (and compiled by XLA) once per shape, not once
    per call. Every call starts afresh from the encoders' output, with
    the optimizer's state reset: the same results as
    `free_form_inference`. The model's weights are read at every step, so
    the object stays valid while the model trains.

    Args:
        autoencoder: a trained `GenerativeCapsuleAutoencoder`.
        num_steps: int, the step budget.
        learning_rate: the step size; None takes the optimizer's default,
            `FREE_FORM_LEARNING_RATES`. Adam's, 0.005: poses vary by about
            0.1 between digits, and on the MNIST model of the
            generative capsules guide 0.005 raised the bound further than
            0.05 (1,084 against 1,053 nats per upright test digit after 50
            steps) and kept the class in the top layer (probe on `(t0,
            A0)` 0.89 -> 0.88, against 0.90 -> 0.64). Gradient ascent's,
            3e-5: on a 32/32-capsule MNIST model 1e-4 and above lowered
            the bound from the first steps, and 3e-5 raised it furthest
            in 50 steps (1e-5: 992, 3e-5: 1,010, 5e-5: 1,004 nats per
            training digit, from 915).
        seed: int seed of the Monte Carlo draws.
        jit_compile: compile each step with XLA.
        refined_parts: which variational parameters move, a name or a
            tuple of names of `REFINED_PARTS`: the template layer's
            presence logits, its poses (every parameter after the logit:
            pose means, and scales with a Gaussian pose posterior), and
            the top layer's parameters. The others stay at the encoders'
            output. All by default, the paper's inference; fewer tell
            which part of the refinement changes what the top layer
            reads.
        recompute_top_layer: with computed top poses or presences, False
            (the default, the paper's fully free posterior) starts the top
            layer's free parameters at the computed posterior of the
            encoders' templates and moves them by the bound alone; True
            computes them from the refined templates at every step, as in
            training. No effect on a model without computed steps; always
            True for a model whose top posterior is a single parent's
            (`top_posterior_family`), exact given the templates.
        optimizer: `"gradient_ascent"` (the default), the paper's "basic
            gradient descent", moves each image's parameters by
            `learning_rate` times the gradient of that image's own bound,
            so each moves in proportion to what the bound asks of it;
            `"adam"` scales every parameter's step to about
            `learning_rate` whatever its gradient, so parameters the bound
            hardly depends on (the top layer's) move as far as those it
            decides.

    Call arguments:
        images: `(batch, H, W, C)`.

    Returns, for each call, `(latents, elbo_history)` as
    `free_form_inference`.

    Examples:

        >>> from keras_capsules.models import generative_capsule_autoencoder
        >>> model = generative_capsule_autoencoder((28, 28, 1), "paper")
        >>> inference = FreeFormInference(model, num_steps=2, jit_compile=False)
        >>> for images in (np.zeros((2, 28, 28, 1)), np.ones((2, 28, 28, 1))):
        ...     latents, bounds = inference(images)  # one trace for both
        >>> len(bounds)
        2
    """

    def __init__(
        self,
        autoencoder,
        num_steps=100,
        learning_rate=None,
        seed=0,
        jit_compile=True,
        refined_parts=REFINED_PARTS,
        recompute_top_layer=False,
        optimizer="gradient_ascent",
    ):
        if num_steps < 1:
            raise ValueError(
                f"Free-form inference expects `num_steps` >= 1. Received: "
                f"num_steps={num_steps}."
            )
        if optimizer not in FREE_FORM_OPTIMIZERS:
            raise ValueError(
                f"Free-form inference expects `optimizer` in "
                f"{FREE_FORM_OPTIMIZERS}. Received: optimizer={optimizer!r}."
            )
        if isinstance(refined_parts, str):
            refined_parts = (refined_parts,)
        unknown = sorted(set(refined_parts) - set(REFINED_PARTS))
        if unknown or not refined_parts:
            raise ValueError(
                f"Free-form inference expects `refined_parts` to be a "
                f"non-empty subset of {REFINED_PARTS}. Received: "
                f"refined_parts={tuple(refined_parts)}."
            )
        self.autoencoder = autoencoder
        self.num_steps = num_steps
        self.learning_rate = (
            FREE_FORM_LEARNING_RATES[optimizer]
            if learning_rate is None
            else learning_rate
        )
        self.seed = seed
        self.jit_compile = jit_compile
        self.refined_parts = tuple(refined_parts)
        # A single parent's posterior is exact given the templates:
        # computed.
        self.recompute_top_layer = recompute_top_layer or (
            autoencoder.config.top_posterior_family == "single_parent"
        )
        self.optimizer = optimizer
        self._programs = {}  # images' shape: _Program

    def __call__(self, images):
        autoencoder = self.autoencoder
        images = tf.convert_to_tensor(images, tf.float32)
        template_parameters = tf.cast(
            autoencoder.template_encoder(images), tf.float32
        )
        templates = autoencoder.posterior_from_parameters(
            template_parameters
        ).mode()
        top_parameters = tf.cast(
            autoencoder.top_encoder(autoencoder.template_capsules(templates)),
            tf.float32,
        )
        if not self.recompute_top_layer:  # Start where computed steps end.
            computed = autoencoder.top_posterior_from_parameters(
                top_parameters, templates
            )
            top_parameters = tf.concat(
                [
                    computed.presence_logits[..., None],
                    computed.pose_means,
                    top_parameters[..., 1 + distributions.POSE_DIM :],
                ],
                -1,
            )
        shape = tuple(images.shape)
        if shape not in self._programs:
            self._programs[shape] = _Program(
                self, images.shape, template_parameters, top_parameters
            )
        program = self._programs[shape]
        program.start(template_parameters, top_parameters)
        history = [
            float(
                program.step(images, tf.constant([self.seed, index], tf.int32))
            )
            for index in range(self.num_steps)
        ]
        template_posterior = autoencoder.posterior_from_parameters(
            program.template_parameters
        )
        top_posterior = self.top_posterior_of(
            program.top_parameters, template_posterior.mode()
        )
        return autoencoder.latents(template_posterior, top_posterior), history

    def top_posterior_of(self, parameters, templates):
        """The top layer's posterior from its free `parameters` (computed
        from `templates` with `recompute_top_layer`)."""
        if self.recompute_top_layer:
            return self.autoencoder.top_posterior_from_parameters(
                parameters, templates
            )
        return self.autoencoder.posterior_from_parameters(parameters)


class _Program:
    """One batch shape's variational parameters (variables), optimizer
    and step function."""

    def __init__(self, inference, images_shape, template_start, top_start):
        self.template_parameters = keras.Variable(template_start)
        self.top_parameters = keras.Variable(top_start)
        variables = [self.template_parameters, self.top_parameters]
        if inference.optimizer == "adam":
            self.step_rule = keras.optimizers.Adam(inference.learning_rate)
        else:
            self.step_rule = keras.optimizers.SGD(inference.learning_rate)
        self.step_rule.build(variables)
        # What `start` restores: the step count, the rate, zero moments.
        self.initial_state = [
            variable.numpy() for variable in self.step_rule.variables
        ]
        refined_parts = inference.refined_parts
        # 1 where a template parameter moves: entry 0 is the presence
        # logit.
        template_mask = tf.constant(
            [
                "template_presences" in refined_parts,
                *["template_poses" in refined_parts]
                * (template_start.shape[-1] - 1),
            ],
            tf.float32,
        )
        top_mask = float("top" in refined_parts)
        # Every image's parameters follow its own bound: the sum's
        # gradient (Adam is the same either way, up to its epsilon).
        images_per_loss = (
            1.0 if inference.optimizer == "adam" else float(images_shape[0])
        )
        autoencoder = inference.autoencoder

        def step(images, step_seed):
            with tf.GradientTape() as tape:
                terms = autoencoder.bound(
                    images,
                    autoencoder.posterior_from_parameters(
                        self.template_parameters
                    ),
                    lambda templates: inference.top_posterior_of(
                        self.top_parameters, templates
                    ),
                    step_seed,
                )
                elbo = tf.reduce_mean(terms["elbo"])
                loss = -elbo * images_per_loss
            template_gradient, top_gradient = tape.gradient(loss, variables)
            self.step_rule.apply_gradients(
                [
                    (template_gradient * template_mask, variables[0]),
                    (top_gradient * top_mask, variables[1]),
                ]
            )
            return elbo

        self.step = tf.function(step, jit_compile=inference.jit_compile)

    def start(self, template_start, top_start):
        """Sets the parameters to the encoders' and the optimizer to its
        state before any step."""
        self.template_parameters.assign(template_start)
        self.top_parameters.assign(top_start)
        for variable, value in zip(
            self.step_rule.variables, self.initial_state
        ):
            variable.assign(value)
