"""How much image-dependent content a capsule layer's posterior carries.

A layer whose encoder ignores its input is "collapsed": every image gets
the same `q(t, A)`, and the bound's KL term for that layer then costs at
least what the best input-ignoring posterior costs (for the top layer of
Smith et al., 2020, at the prior: `t ~ Bern(p)`, `A = 0`; 88.2 nats for
16 capsules of 6-D delta poses). This module measures the cost above that
of the best input-ignoring posterior, over a set of images:

```none
q_xi = q(t_i = 1 | x)                         presences, per image x
A_xi                                          pose means (MAP poses)
q_bar_i, A_bar_i                              their means over the images

presence information = sum_i mean_x KL(Bern(q_xi) || Bern(q_bar_i))
pose information     = sum_i mean_x 0.5 |A_xi - A_bar_i|^2
```

The presence part is, for every capsule, the mutual information between
the image and a Bernoulli presence drawn from `q`; it is the expected KL
to the prior minus the KL of the mean posterior to the prior, so it does
not count what a constant posterior spends. The pose part is the expected
`-log N(A; 0, I)` (the prior cost of a MAP pose) minus that of the mean
pose. Both are 0 exactly when every image gets the same posterior and
grow with how differently images are encoded, in nats per image. Over a
finite set of images both are biased low (the set's own mean is the
closest constant).
"""

from keras import ops

# Mean presences are kept this far from 0 and 1 inside the logarithms.
_PROBABILITY_MARGIN = 1e-6


def layer_information(presence_logits, pose_means):
    """The image-dependent content of one layer's posterior, in nats.

    Args:
        presence_logits: `(batch, n)` logits of `q(t_i = 1)`.
        pose_means: `(batch, n, pose_dim)` pose means (MAP poses).

    Returns:
        Dict of scalars: `presence_information`, `pose_information`,
        `information` (their sum), `pose_magnitude` (mean `|A|` over
        images, capsules and pose entries) and `presence_spread` (the std
        of `q(t_i = 1)` across images, averaged over capsules).

    Examples:

        >>> information = layer_information(np.zeros((4, 3), "float32"),
        ...                                 np.zeros((4, 3, 6), "float32"))
        >>> round(float(information["information"]), 4)  # alike images: none
        0.0
    """
    logits = ops.cast(presence_logits, "float32")
    poses = ops.cast(pose_means, "float32")
    presences = ops.sigmoid(logits)
    mean_presences = ops.clip(
        ops.mean(presences, axis=0),
        _PROBABILITY_MARGIN,
        1.0 - _PROBABILITY_MARGIN,
    )
    # KL(Bern(q) || Bern(q_bar)), with log q from the logits (stable).
    kl = presences * (ops.log_sigmoid(logits) - ops.log(mean_presences)) + (
        1.0 - presences
    ) * (ops.log_sigmoid(-logits) - ops.log(1.0 - mean_presences))
    presence_information = ops.sum(ops.mean(kl, axis=0))
    deviations = poses - ops.mean(poses, axis=0)
    pose_information = 0.5 * ops.sum(ops.mean(ops.square(deviations), axis=0))
    return {
        "presence_information": presence_information,
        "pose_information": pose_information,
        "information": presence_information + pose_information,
        "pose_magnitude": ops.mean(ops.abs(poses)),
        "presence_spread": ops.mean(ops.std(presences, axis=0)),
    }


def explained_by_parents(model, top, templates):
    """What a top layer's image-specific state buys the layer below, in
    nats per image: the mean over images of

    ```none
    log p(t^1, A^1 | t^0, A^0) - log p(t^1, A^1 | mean_x t^0, mean_x A^0)
    ```

    with the top layer's event replaced, on the right, by its mean over
    the images (relaxed presences as their logits). It is 0 exactly when
    every image gets the same top-layer event, and large when the
    parents predict their children well only with each image's own
    state. Unlike `layer_information` it does not depend on what the
    prior charges for a pose, so delta poses that explain their
    children are counted.

    Args:
        model: a `GenerativeCapsuleModel`.
        top: a top-layer event for a batch of images.
        templates: the template-layer event of the same images.

    Returns:
        A scalar.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> tuple(ops.shape(explained_by_parents(model, top,
        ...       templates)))  # nats
        ()
    """
    shared = {
        key: ops.broadcast_to(
            ops.mean(value, axis=0, keepdims=True), ops.shape(value)
        )
        for key, value in top.items()
    }
    own = model.template_conditional(top).log_prob(templates)
    common = model.template_conditional(shared).log_prob(templates)
    return ops.mean(own - common)
