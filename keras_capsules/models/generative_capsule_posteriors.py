"""The variational posteriors of the generative capsule autoencoder
(Smith et al., 2020, section 2.3): from the encoders' parameters, and the
top layer's computed from the templates as its `GenerativeCapsuleConfig`
says."""

import tensorflow as tf  # log_softmax of the constant single-parent scores
from keras import ops

from keras_capsules import distributions
from keras_capsules.models.generative_capsule_config import SINGLE_PARENT

# Pose posterior stds are kept above this (Gaussian poses).
MIN_POSE_POSTERIOR_SCALE = 1e-3


def from_parameters(parameters, pose_posterior, temperature):
    """A `CapsulePosterior` from `(batch, n, p)` encoder outputs: a
    presence logit, a pose mean and, for `"gaussian"` poses, a pose std
    (through a softplus) per capsule."""
    parameters = ops.cast(parameters, "float32")
    pose_dim = distributions.POSE_DIM
    pose_scales = None
    if pose_posterior == "gaussian":
        pose_scales = MIN_POSE_POSTERIOR_SCALE + ops.softplus(
            parameters[..., 1 + pose_dim :]
        )
    return distributions.CapsulePosterior(
        presence_logits=parameters[..., 0],
        pose_means=parameters[..., 1 : 1 + pose_dim],
        pose_scales=pose_scales,
        temperature=temperature,
    )


def template_capsules(templates):
    """The top encoder's input, `(batch, n1, 7)`: each template's presence
    and pose, from a template-layer event."""
    presences = ops.sigmoid(templates["presence_logit"])
    return ops.concatenate([presences[..., None], templates["pose"]], -1)


def top_posterior(decoder, config, parameters, templates, training=False):
    """The top layer's posterior from `(batch, n0, p)` encoder
    `parameters`, as `config` (a `GenerativeCapsuleConfig`) says.

    With `top_pose_refinement_steps` the poses start where the top encoder
    puts them and take that many EM steps toward the poses that best
    explain the template poses of `templates` (a template-layer event)
    under eq. 5 and the prior (`distributions.refine_parent_poses`); the
    bound stays a bound (with delta poses the poses are variational
    parameters). With `top_presence_refinement_steps` the presences then
    take that many mean-field steps
    (`distributions.parent_presence_logits`). With
    `top_posterior_family="single_parent"` exactly one top capsule is
    present (`single_parent`): for each parent alone its pose by the EM
    steps from the encoder's, `q(t^0 = e_i)` the softmax of the log joints
    (the exact posterior within the family, whose bound
    `distributions.single_parent_elbo` sums over the `n0` events exactly);
    in `training` each batch's posterior is balanced across the parents
    (`distributions.balanced_assignments`), which keeps one parent from
    taking every digit.
    """
    posterior = from_parameters(
        parameters, config.pose_posterior, decoder.temperature
    )
    model = decoder.generative_model()
    if config.top_posterior_family == SINGLE_PARENT:
        return single_parent(
            model,
            config,
            posterior.pose_means,
            templates,
            training,
            decoder.temperature,
        )
    if config.top_pose_refinement_steps:
        posterior.pose_means = distributions.refine_parent_poses(
            model,
            posterior.mode(),
            templates,
            config.top_pose_refinement_steps,
        )
    for _ in range(config.top_presence_refinement_steps):
        posterior.presence_logits = distributions.parent_presence_logits(
            model,
            ops.sigmoid(posterior.presence_logits),
            posterior.pose_means,
            templates,
        )
    return posterior


def single_parent(model, config, start_poses, templates, training, temperature):
    """The `SingleParentPosterior` of a template-layer event under the
    generative `model`, the parents' poses by
    `config.top_pose_refinement_steps` EM steps from `start_poses` `(batch,
    n0, 6)`; its probabilities are constants (the bound's gradient in them
    is 0 at the exact posterior), balanced across the batch in `training`
    at `config.single_parent_balance_temperature`."""
    scores, poses = distributions.single_parent_choices(
        model, start_poses, templates, config.top_pose_refinement_steps
    )
    scores = tf.stop_gradient(scores)
    balance = float(config.single_parent_balance_temperature)
    if training and balance:
        log_probabilities = distributions.balanced_assignments(scores, balance)
    else:
        log_probabilities = tf.nn.log_softmax(scores)
    return distributions.SingleParentPosterior(
        log_probabilities, poses, temperature
    )
