"""Parent presences computed from how much each parent explains its
children: a mean-field step on `q(t^(k-1))` (Smith et al., 2020, eqs. 1,
3-6 and 9).

With the other parents' presences and every pose held fixed, the
Bernoulli `q(t_i)` that maximises the bound

```none
log p(t_i) + E_q[log p(t^k, A^k | t_i, t_-i, A^(k-1))] - log q(t_i)
```

has the logit

```none
logit q(t_i = 1) = logit p_i + log p(t^k, A^k | t_i = 1, t_-i, A^(k-1))
                             - log p(t^k, A^k | t_i = 0, t_-i, A^(k-1))
```

(coordinate ascent in mean-field variational inference; the other
parents enter at their current presences, and the children's density is
eq. 9, selections summed out). A parent is present when the children it
explains are worth more than the prior charges for it. Every parent is
updated at once from the same current presences. Whatever logits this
returns, the bound stays a bound: they are the variational parameters,
computed rather than predicted.
"""

import tensorflow as tf


def parent_presence_logits(model, presences, poses, templates):
    """One mean-field step on the top layer's presences.

    Args:
        model: a `GenerativeCapsuleModel`.
        presences: `(batch, n0)` current `q(t^0 = 1)`, where the step
            starts.
        poses: `(batch, n0, 6)` top-layer poses.
        templates: a template-layer event (the children).

    Returns:
        `(batch, n0)` logits of `q(t^0 = 1)`.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> logits = parent_presence_logits(
        ...     model, np.full((4, 2), 0.5, "float32"), top["pose"], templates)
        >>> tuple(logits.shape)
        (4, 2)
    """
    num_parents = presences.shape[-1]
    # Presences with parent i switched on, then off: (batch, 2, i, n0).
    identity = tf.eye(num_parents, dtype=presences.dtype)
    others = presences[:, None, :] * (1.0 - identity)
    switched = tf.stack([others + identity, others], axis=1)
    conditional = model.template_conditional_given(
        switched, poses[:, None, None]
    )
    children = {key: value[:, None, None] for key, value in templates.items()}
    log_likelihoods = conditional.log_prob(children)  # (batch, 2, i)
    return (
        tf.cast(model.top_presence_logits, presences.dtype)
        + log_likelihoods[:, 0]
        - log_likelihoods[:, 1]
    )
