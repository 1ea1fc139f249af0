"""The bound with the top layer's presences Bernoulli, as eq. 1 writes
them (Smith et al., 2020, eqs. 1-9), not Concrete-relaxed.

The model is trained on its Concrete relaxation (`presences`), where a
parent's presence is a number in (0, 1) that scales its weight in every
child's choice of parent (eq. 3). With Bernoulli presences a parent is in
a child's mixture or out of it. This bound asks which top-layer
presences the unrelaxed model prefers; the template layer stays relaxed,
as trained (`CapsuleConditional` takes binary parents either way).

```none
t^1, A^1 ~ q(t^1, A^1 | X)
A^0      ~ q(A^0 | t^1, A^1)
L = log p(X | t^1, A^1) - log q(t^1, A^1 | X)
  + E_{t^0 ~ Bern(q)} [log p(t^1, A^1 | t^0, A^0)]
  - KL(Bern(q(t^0)) || Bern(p)) + log p(A^0) - log q(A^0)
```

`q(t^0_i = 1) = sigmoid(presence_logits_i)`, the probability whose
relaxation the trained posterior draws from. The KL of the presences is
exact; the expectation over `t^0` is exact (every one of the `2^n0`
presence vectors) or the mean of `num_draws` draws.
"""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import elbo
from keras_capsules.distributions import presences as presence_lib

tfd = tfp.distributions

# 2^16 presence vectors: the most an exact expectation enumerates.
MAX_ENUMERATED_PARENTS = 16


def bernoulli_kl(logits, prior_logits):
    """`KL(Bern(sigmoid(logits)) || Bern(sigmoid(prior_logits)))`, summed
    over the last axis; finite at saturated logits."""
    probability = tf.math.sigmoid(logits)
    return tf.reduce_sum(
        probability
        * (tf.math.log_sigmoid(logits) - tf.math.log_sigmoid(prior_logits))
        + (1.0 - probability)
        * (tf.math.log_sigmoid(-logits) - tf.math.log_sigmoid(-prior_logits)),
        -1,
    )


def _presence_vectors(num_parents, dtype):
    """Every binary presence vector, `(2^n0, n0)`."""
    if num_parents > MAX_ENUMERATED_PARENTS:
        raise ValueError(
            "An exact expectation enumerates all 2^n0 top-layer presence "
            f"vectors, at most n0 = {MAX_ENUMERATED_PARENTS}. Received "
            f"n0 = {num_parents}. Pass `num_draws` (for example 16) for a "
            "Monte Carlo estimate."
        )
    codes = tf.range(2**num_parents)[:, None]
    bits = tf.bitwise.right_shift(codes, tf.range(num_parents)[None, :]) % 2
    return tf.cast(bits, dtype)


def expected_log_likelihood(
    model, logits, poses, templates, num_draws, seed, rows=None
):
    """`E_{t^0 ~ Bern(sigmoid(logits))} log p(t^1, A^1 | t^0, A^0)`,
    `(batch,)`: exact when `num_draws` is None, else the mean over
    `num_draws` draws of every image's presences (`rows`: as in
    `CapsulePosterior.sample`, these images' rows of the draws for a
    larger batch)."""
    if num_draws is None:
        parents = _presence_vectors(logits.shape[-1], logits.dtype)[:, None]
        weights = tf.exp(_log_q(parents, logits))  # (2^n0, batch)
        return tf.reduce_sum(
            weights * _log_likelihoods(model, parents, poses, templates), 0
        )
    if int(num_draws) < 1:
        raise ValueError(
            "`num_draws` must be a positive integer or None (exact). "
            f"Received: {num_draws!r}."
        )
    batch = tf.shape(logits)[0]
    offset, total = (0, batch) if rows is None else rows
    shape = tf.stack([num_draws, tf.cast(total, tf.int32), tf.shape(logits)[1]])
    noise = presence_lib.logistic_noise(shape, seed, logits.dtype)[
        :, offset : offset + batch
    ]
    parents = tf.cast(noise < logits, logits.dtype)  # (draws, batch, n0)
    log_likelihoods = _log_likelihoods(model, parents, poses, templates)
    return tf.reduce_mean(log_likelihoods, 0) + _score_function_term(
        parents, logits, log_likelihoods
    )


def _log_q(parents, logits):
    """`log q(t^0)` of binary presence vectors `(..., n0)` under
    `Bern(sigmoid(logits))`, summed over the parents."""
    return tf.reduce_sum(
        presence_lib.presence_log_prob(parents, logits, temperature=None), -1
    )


def _log_likelihoods(model, parents, poses, templates):
    """`log p(t^1, A^1 | t^0, A^0)` for presence vectors `(k, batch or
    1, n0)`: `(k, batch)`."""
    return model.template_conditional_given(parents, poses[None]).log_prob(
        templates
    )


def _score_function_term(parents, logits, log_likelihoods):
    """Zero in value; its gradient in `logits` is the score-function
    estimate of the expectation's (the draws are not differentiable):
    `mean_k (f_k - b_k) d log q(t_k) / d logits`, each draw's baseline
    `b_k` the mean of the other draws' `f` (leave-one-out; Kool, van Hoof
    and Welling, 2019), or 0 with one draw."""
    num_draws = log_likelihoods.shape[0]
    log_q = _log_q(parents, logits)  # (draws, batch)
    values = tf.stop_gradient(log_likelihoods)
    baselines = tf.zeros_like(values)
    if num_draws > 1:
        baselines = (tf.reduce_sum(values, 0) - values) / (num_draws - 1)
    surrogate = tf.reduce_mean((values - baselines) * log_q, 0)
    return surrogate - tf.stop_gradient(surrogate)


def binary_top_elbo(
    model,
    images,
    template_posterior,
    top_posterior_fn,
    seed,
    num_draws=None,
    rows=None,
    stop_gradient_between_layers=False,
):
    """The bound above, per image. Gradients reach the top layer's
    presence logits through the exact expectation, or, estimated from
    draws, through a score-function term with leave-one-out baselines.

    Args:
        model: a relaxed `GenerativeCapsuleModel` (`temperature` set: the
            template layer's events hold presence logits).
        images: `(batch, H, W, C)`.
        template_posterior: `CapsulePosterior` of the template layer.
        top_posterior_fn: callable from a template-layer event to the top
            layer's `CapsulePosterior`; its presence logits are read as
            `logit q(t^0 = 1)`.
        seed: stateless seed, `(2,)` integers.
        num_draws: None for the exact expectation over the top layer's
            presences (up to 16 top capsules), or a number of draws.
        rows: optional `(offset, total)` of these images in a larger batch
            (a replica's share): every draw is that of these rows in a
            draw for all `total` rows, as in `capsule_elbo`.
        stop_gradient_between_layers: the template-layer draw enters the
            top layer's terms as a constant, as in `capsule_elbo`.

    Returns:
        Dict of `(batch,)` tensors: `elbo`, `reconstruction`,
        `template_kl` (`log q(t^1, A^1 | X)` minus the expected
        `log p(t^1, A^1 | t^0, A^0)`) and `top_kl` (the presences' exact
        KL plus `log q(A^0) - log p(A^0)` at the pose draw); the
        template-layer draw `templates`, and the two layers' posteriors
        `template_posterior` and `top_posterior`.

    Examples:

        >>> from keras_capsules import distributions, layers
        >>> decoder = layers.GenerativeCapsuleDecoder(2, 3)
        >>> zeros = lambda *shape: np.zeros(shape, "float32")
        >>> template_posterior = distributions.CapsulePosterior(
        ...     zeros(4, 3), zeros(4, 3, 6), None, 1.0)
        >>> terms = binary_top_elbo(
        ...     decoder.generative_model(), zeros(4, 28, 28, 1),
        ...     template_posterior,
        ...     lambda templates: distributions.CapsulePosterior(
        ...         zeros(4, 2), zeros(4, 2, 6), None, 1.0),
        ...     seed=(0, 1))
        >>> tuple(terms["elbo"].shape)
        (4,)
    """
    template_seed, pose_seed, presence_seed = tfp.random.split_seed(seed, 3)
    templates, parent_view = elbo.template_draw(
        template_posterior, template_seed, rows, stop_gradient_between_layers
    )
    top_posterior = top_posterior_fn(parent_view)
    poses = top_posterior.sample(pose_seed, rows)["pose"]
    logits = top_posterior.presence_logits
    template_kl = template_posterior.log_prob(
        templates
    ) - expected_log_likelihood(
        model, logits, poses, parent_view, num_draws, presence_seed, rows
    )
    top_kl = bernoulli_kl(
        logits, tf.cast(model.top_presence_logits, logits.dtype)
    ) + _pose_log_ratio(top_posterior, poses)
    return elbo.bound_terms(
        model.image_likelihood(templates).log_prob(images),
        template_kl,
        top_kl,
        templates=templates,
        template_posterior=template_posterior,
        top_posterior=top_posterior,
    )


def _pose_log_ratio(posterior, poses):
    """`log q(A^0) - log p(A^0)` at the draw `poses`, `(batch,)`; `p` is
    eq. 2's N(0, I), and delta poses leave out `log q` (the paper's
    partially variational bound, `CapsulePosterior`)."""
    standard = tfd.Normal(
        tf.constant(0.0, poses.dtype), tf.constant(1.0, poses.dtype)
    )
    log_ratio = -tf.reduce_sum(standard.log_prob(poses), [-2, -1])
    if posterior.pose_scales is not None:
        log_ratio += tf.reduce_sum(
            tfd.Normal(posterior.pose_means, posterior.pose_scales).log_prob(
                poses
            ),
            [-2, -1],
        )
    return log_ratio
