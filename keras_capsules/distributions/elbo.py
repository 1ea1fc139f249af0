"""The evidence lower bound of the generative capsule model (eq. 8)."""

import tensorflow as tf
import tensorflow_probability as tfp


def capsule_elbo(
    model,
    images,
    template_posterior,
    top_posterior_fn,
    seed,
    stop_gradient_between_layers=False,
    rows=None,
):
    """A one-sample estimate of eq. 8, layer by layer (supplementary A).

    ```none
    t^1, A^1 ~ q(t^1, A^1 | X)               template_posterior
    t^0, A^0 ~ q(t^0, A^0 | t^1, A^1)         top_posterior_fn(templates)
    L = log p(X | t^1, A^1)                                  reconstruction
      + log p(t^1, A^1 | t^0, A^0) - log q(t^1, A^1 | X)     -template_kl
      + log p(t^0, A^0) - log q(t^0, A^0 | t^1, A^1)         -top_kl
    ```

    The selections `s` are summed out exactly inside
    `log p(t^1, A^1 | t^0, A^0)` (eq. 9). Every draw is reparameterised,
    so the estimate is differentiable in the generative and variational
    parameters.

    Args:
        model: a relaxed `GenerativeCapsuleModel` (`temperature` set).
        images: `(batch, H, W, C)`.
        template_posterior: `CapsulePosterior` of the template layer.
        top_posterior_fn: callable from a template-layer event to the
            `CapsulePosterior` of the top layer (the amortised set
            encoder, or fixed parameters in free-form inference).
        seed: stateless seed, `(2,)` integers.
        stop_gradient_between_layers: the template-layer draw enters the
            top layer's terms (the top encoder and
            `log p(t^1, A^1 | t^0, A^0)`) as a constant, as in stacked
            capsule autoencoders (Kosiorek et al., 2019): the template
            encoder then learns from the reconstruction and its own
            entropy only, and the top layer models what it finds. The
            value of the bound is unchanged.
        rows: optional `(offset, total)` of these images in a larger batch
            (a replica's share): the draws are those of rows `offset` to
            `offset + batch` of a draw for all `total` rows
            (`CapsulePosterior.sample`).

    Returns:
        Dict of `(batch,)` tensors: `elbo`, `reconstruction`,
        `template_kl`, `top_kl` (one-sample estimates of the KL terms);
        and the draws `templates` and `top` (event dicts), and the two
        layers' posteriors `template_posterior` and `top_posterior`.

    Examples:

        >>> from keras_capsules.distributions import CapsulePosterior
        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> def posterior(count):  # delta poses at 0, presences of 1/2
        ...     return CapsulePosterior(
        ...         np.zeros((4, count), "float32"),
        ...         np.zeros((4, count, 6), "float32"), None, temperature=1.0)
        >>> terms = capsule_elbo(
        ...     decoder.generative_model(), np.zeros((4, 28, 28, 1), "float32"),
        ...     posterior(3), lambda templates: posterior(2), seed=(0, 1))
        >>> tuple(terms["elbo"].shape), tuple(terms["top_kl"].shape)
        ((4,), (4,))
    """
    template_seed, top_seed = tfp.random.split_seed(seed, 2)
    templates, parent_view = template_draw(
        template_posterior, template_seed, rows, stop_gradient_between_layers
    )
    top_posterior = top_posterior_fn(parent_view)
    top = top_posterior.sample(top_seed, rows)
    template_kl = template_posterior.log_prob(
        templates
    ) - model.template_conditional(top).log_prob(parent_view)
    return bound_terms(
        model.image_likelihood(templates).log_prob(images),
        template_kl,
        top_posterior.log_prob(top) - model.top_prior().log_prob(top),
        templates=templates,
        top=top,
        template_posterior=template_posterior,
        top_posterior=top_posterior,
    )


def template_draw(template_posterior, seed, rows, stop_gradient_between_layers):
    """`(templates, parent_view)`: a draw of the template layer (rows
    `rows` of a larger batch's draw, if given) and what the top layer's
    terms see of it, the draw itself or, with
    `stop_gradient_between_layers`, the draw as a constant."""
    templates = template_posterior.sample(seed, rows)
    parent_view = templates
    if stop_gradient_between_layers:
        parent_view = tf.nest.map_structure(tf.stop_gradient, templates)
    return templates, parent_view


def bound_terms(reconstruction, template_kl, top_kl, **draws):
    """The dict a bound returns: `elbo` (`reconstruction - template_kl -
    top_kl`), the three terms, and `draws` (draws and posteriors)."""
    return {
        "elbo": reconstruction - template_kl - top_kl,
        "reconstruction": reconstruction,
        "template_kl": template_kl,
        "top_kl": top_kl,
        **draws,
    }
