"""The bound with one top-layer parent present (Smith et al., 2020,
eqs. 1-9, top presences Bernoulli; the posterior `SingleParentPosterior`).

The expectation over the top layer is a sum over its `n0` events, so
it is exact:

```none
t^1, A^1 ~ q(t^1, A^1 | X)
L = log p(X | t^1, A^1) - log q(t^1, A^1 | X)
  + sum_i q_i [log p(t^1, A^1 | e_i, A^0_i) + log p(t^0 = e_i)
               + log N(A^0_i; 0, I) - log q_i]
```

with `q_i = q(t^0 = e_i)` and `A^0_i` the poses when parent `i` alone is
present (delta poses: `log q(A^0)` left out, as in the paper's partially
variational bound). With `q_i` the softmax of the bracket's first three
terms (`single_parent_choices`) the top layer's part is their
`logsumexp`, the most this family reaches; with one `q_i` equal to 1 the
bound is `binary_top_elbo`'s at that presence vector.
"""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import elbo
from keras_capsules.distributions.single_parents import single_parent_terms


def single_parent_elbo(
    model,
    images,
    template_posterior,
    top_posterior_fn,
    seed,
    rows=None,
    stop_gradient_between_layers=False,
):
    """The bound above, per image.

    Args:
        model: a `GenerativeCapsuleModel` (relaxed or binary: the
            template layer's events as it reads them).
        images: `(batch, H, W, C)`.
        template_posterior: `CapsulePosterior` of the template layer.
        top_posterior_fn: callable from a template-layer event to the top
            layer's `SingleParentPosterior`.
        seed: stateless seed, `(2,)` integers; the template layer is
            drawn with the first of its three splits, as in
            `binary_top_elbo`, so both bounds see the same draw.
        rows: optional `(offset, total)` of these images in a larger batch
            (a replica's share), as in `capsule_elbo`.
        stop_gradient_between_layers: the template-layer draw enters the
            top layer's terms as a constant, as in `capsule_elbo`.

    Returns:
        Dict of `(batch,)` tensors: `elbo`, `reconstruction`,
        `template_kl` (`log q(t^1, A^1 | X)` minus the expected
        `log p(t^1, A^1 | t^0, A^0)`) and `top_kl` (the top layer's
        `KL(q || p)`, poses at their deltas); the template-layer draw
        `templates`, and the two layers' posteriors `template_posterior`
        and `top_posterior`.

    Examples:

        >>> from keras_capsules import distributions, layers
        >>> decoder = layers.GenerativeCapsuleDecoder(2, 3)
        >>> images = np.zeros((4, 28, 28, 1), "float32")
        >>> templates = distributions.CapsulePosterior(  # presences of 1/2
        ...     np.zeros((4, 3), "float32"), np.zeros((4, 3, 6), "float32"),
        ...     None, 1.0)
        >>> def one_parent(events):  # either parent, with probability 1/2
        ...     return distributions.SingleParentPosterior(
        ...         np.log(np.full((4, 2), 0.5, "float32")),
        ...         np.zeros((4, 2, 2, 6), "float32"), 1.0)
        >>> terms = single_parent_elbo(decoder.generative_model(), images,
        ...                            templates, one_parent, seed=(0, 1))
        >>> bool(np.all(np.isfinite(terms["elbo"])))
        True
    """
    template_seed, _, _ = tfp.random.split_seed(seed, 3)
    templates, parent_view = elbo.template_draw(
        template_posterior, template_seed, rows, stop_gradient_between_layers
    )
    top_posterior = top_posterior_fn(parent_view)
    log_likelihoods, log_priors = single_parent_terms(
        model, top_posterior.parent_poses, parent_view
    )
    log_q = top_posterior.log_probabilities
    q = tf.exp(log_q)

    def expectation(values):  # 0 log 0 = 0: weight 0 adds nothing.
        return tf.reduce_sum(tf.where(q > 0, q * values, tf.zeros_like(q)), -1)

    return elbo.bound_terms(
        model.image_likelihood(templates).log_prob(images),
        template_posterior.log_prob(templates) - expectation(log_likelihoods),
        expectation(log_q - log_priors),
        templates=templates,
        template_posterior=template_posterior,
        top_posterior=top_posterior,
    )
