"""Measures of the generative capsule model's posteriors: how much of the
image its capsule layers carry (training objectives and metrics), and the
probes' features of its top layer."""

import numpy as np
from keras import ops

from keras_capsules import distributions

BOUND_TERMS = ("elbo", "reconstruction", "template_kl", "top_kl")
# Metric names of `distributions.layer_information` of the top layer.
TOP_LAYER_MEASURES = {
    "top_information": "information",
    "top_presence_information": "presence_information",
    "top_pose_magnitude": "pose_magnitude",
    "top_presence_spread": "presence_spread",
}
# What `GenerativeCapsuleAutoencoder` reports in training and evaluation.
TRAINING_MEASURES = (*BOUND_TERMS, *TOP_LAYER_MEASURES, "top_explained")


def training_measures(model, terms):
    """`{name: (batch,) or scalar}` of `TRAINING_MEASURES`: the bound's
    `terms` (`distributions.capsule_elbo`'s) and what the top layer
    carries (`distributions.layer_information` of the top posterior, and
    `distributions.explained_by_parents` at its mode under the generative
    `model`)."""
    top = terms["top_posterior"]
    layer = distributions.layer_information(top.presence_logits, top.pose_means)
    return {
        **{name: terms[name] for name in BOUND_TERMS},
        **{name: layer[key] for name, key in TOP_LAYER_MEASURES.items()},
        "top_explained": distributions.explained_by_parents(
            model, top.mode(), terms["templates"]
        ),
    }


def presence_information(posterior):
    """The information between the image and a layer's presences over
    a batch (`distributions.layer_information` of a `CapsulePosterior`),
    in nats per image.

    Examples:

        >>> from keras_capsules.distributions import CapsulePosterior
        >>> posterior = CapsulePosterior(
        ...     np.zeros((2, 4)), np.zeros((2, 4, 6)), None, 1.0)
        >>> round(float(presence_information(posterior)), 4)  # alike: none
        0.0
    """
    return distributions.layer_information(
        posterior.presence_logits, posterior.pose_means
    )["presence_information"]


def expected_presence_count(posterior):
    """`(batch,)` expected number of present capsules, `sum_j q(t_j = 1)`,
    of a `CapsulePosterior`.

    Examples:

        >>> from keras_capsules.distributions import CapsulePosterior
        >>> posterior = CapsulePosterior(
        ...     np.zeros((2, 4)), np.zeros((2, 4, 6)), None, 1.0)
        >>> ops.convert_to_numpy(expected_presence_count(posterior))  # 4 x 1/2
        array([2., 2.])
    """
    return ops.sum(ops.sigmoid(posterior.presence_logits), axis=-1)


def selection_information(selection_posterior):
    """The information between the image and the parent that explains a
    random template, over a batch, in nats:
    `H(mean_x u_x) - mean_x H(u_x)` with `u_x[i] = mean_j p(s_j = i | x)`
    each parent's share (the dummy parent's included) of image `x`'s
    templates.

    Args:
        selection_posterior: `(batch, n_p + 1, n_c)`, from
            `CapsuleConditional.selection_posterior`.

    Examples:

        >>> first, second = np.eye(3)[[0, 0]].T, np.eye(3)[[1, 1]].T
        >>> posterior = np.stack([first, second])  # each image one parent
        >>> round(float(selection_information(posterior)), 4)  # log 2
        0.6931
    """
    shares = ops.mean(ops.cast(selection_posterior, "float32"), axis=-1)

    def entropy(p):
        return -ops.sum(p * ops.log(ops.maximum(p, 1e-12)), axis=-1)

    return entropy(ops.mean(shares, axis=0)) - ops.mean(entropy(shares))


def top_layer_features(latents):
    """Probe features of `encode`'s latents (Smith et al., Table 1):
    `{"t0": (batch, n0) presence logits, "t0_A0": (batch, n0 * 7) those and
    the flattened poses}`, as NumPy arrays.

    Examples:

        >>> features = top_layer_features(
        ...     {"top_presence_logits": np.zeros((2, 4)),
        ...      "top_poses": np.zeros((2, 4, 6))})
        >>> {name: value.shape for name, value in features.items()}
        {'t0': (2, 4), 't0_A0': (2, 28)}
    """
    presences = np.asarray(latents["top_presence_logits"])
    poses = np.asarray(latents["top_poses"]).reshape(len(presences), -1)
    return {"t0": presences, "t0_A0": np.concatenate([presences, poses], 1)}
