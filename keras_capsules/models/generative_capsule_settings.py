"""The settings of `GenerativeCapsuleAutoencoder`, checked: each one's
range, and the combinations the model cannot train."""

import numpy as np

from keras_capsules.models import generative_capsules

# `top_posterior_family`: the paper's independent top capsules, or one
# parent present (`distributions.SingleParentPosterior`).
MEAN_FIELD = "mean_field"
SINGLE_PARENT = "single_parent"
TOP_POSTERIOR_FAMILIES = (MEAN_FIELD, SINGLE_PARENT)


def check_settings(
    num_templates,
    *,
    pose_posterior,
    top_kl_warmup_steps,
    presence_information_weight,
    selection_information_weight,
    top_pose_refinement_steps,
    top_presence_refinement_steps,
    template_presence_information_weight,
    template_count_weight,
    template_count_target,
    binary_top_presence_draws,
    top_posterior_family,
    single_parent_balance_temperature,
):
    """Raises a `ValueError` that names the setting, what it received and
    what it expects, unless the settings (`GenerativeCapsuleAutoencoder`'s
    arguments of the same names) make a model it can train;
    `num_templates` is the decoder's number of template capsules."""
    if pose_posterior not in generative_capsules.POSE_POSTERIORS:
        raise ValueError(
            "`GenerativeCapsuleAutoencoder` expects `pose_posterior` in "
            f"{generative_capsules.POSE_POSTERIORS}. Received: "
            f"{pose_posterior!r}."
        )
    if not (
        isinstance(top_kl_warmup_steps, (int, np.integer))
        and top_kl_warmup_steps >= 0
    ):
        raise ValueError(
            "`GenerativeCapsuleAutoencoder` expects `top_kl_warmup_steps`"
            " to be an int >= 0 (0: no warm-up). Received: "
            f"{top_kl_warmup_steps!r}."
        )
    for name, steps, zero in (
        (
            "top_pose_refinement_steps",
            top_pose_refinement_steps,
            "the encoder's values",
        ),
        (
            "top_presence_refinement_steps",
            top_presence_refinement_steps,
            "the encoder's values",
        ),
        (
            "binary_top_presence_draws",
            binary_top_presence_draws,
            "the relaxed bound",
        ),
    ):
        if not (isinstance(steps, (int, np.integer)) and steps >= 0):
            raise ValueError(
                f"`GenerativeCapsuleAutoencoder` expects `{name}` to be "
                f"an int >= 0 (0: {zero}). Received: {steps!r}."
            )
    if binary_top_presence_draws and selection_information_weight:
        raise ValueError(
            "`GenerativeCapsuleAutoencoder` cannot combine "
            "`selection_information_weight` with "
            "`binary_top_presence_draws`: the selection information is "
            "measured on a relaxed top-layer draw. Received: "
            f"selection_information_weight={selection_information_weight!r}"
            f", binary_top_presence_draws={binary_top_presence_draws!r}."
            " Set one of them to 0."
        )
    for name, weight in (
        ("presence_information_weight", presence_information_weight),
        ("selection_information_weight", selection_information_weight),
        (
            "template_presence_information_weight",
            template_presence_information_weight,
        ),
        ("template_count_weight", template_count_weight),
    ):
        if not weight >= 0:
            raise ValueError(
                f"`GenerativeCapsuleAutoencoder` expects `{name}` >= 0 "
                f"(0: the bound alone). Received: {weight!r}."
            )
    _check_top_posterior_family(
        top_posterior_family,
        single_parent_balance_temperature,
        {
            "pose_posterior": (pose_posterior, "delta"),
            "top_presence_refinement_steps": (
                top_presence_refinement_steps,
                0,
            ),
            "binary_top_presence_draws": (binary_top_presence_draws, 0),
            "presence_information_weight": (
                presence_information_weight,
                0.0,
            ),
            "selection_information_weight": (
                selection_information_weight,
                0.0,
            ),
        },
    )
    if template_count_weight and not (
        template_count_target is not None
        and 0 < template_count_target <= num_templates
    ):
        raise ValueError(
            "`GenerativeCapsuleAutoencoder` expects `template_count_target`"
            f" in (0, {num_templates}] (the decoder's number of templates) "
            "when `template_count_weight` > 0. Received: "
            f"{template_count_target!r}."
        )


def _check_top_posterior_family(family, balance_temperature, settings):
    """Raises a `ValueError` unless `family` is one of
    `TOP_POSTERIOR_FAMILIES` and, for a single parent, every
    `{name: (value, required)}` of `settings` has its required value
    and `balance_temperature` >= 0 (0 for the mean field)."""
    name = "GenerativeCapsuleAutoencoder"
    if family not in TOP_POSTERIOR_FAMILIES:
        raise ValueError(
            f"`{name}` expects `top_posterior_family` in "
            f"{TOP_POSTERIOR_FAMILIES}. Received: {family!r}."
        )
    if family == MEAN_FIELD:
        if balance_temperature:
            raise ValueError(
                f"`{name}` balances single parents only: "
                "`single_parent_balance_temperature` needs "
                f'`top_posterior_family="{SINGLE_PARENT}"`. Received: '
                f"single_parent_balance_temperature={balance_temperature!r}"
                f" with top_posterior_family={family!r}. Set it to 0 or "
                "change the family."
            )
        return
    if not balance_temperature >= 0:
        raise ValueError(
            f"`{name}` expects `single_parent_balance_temperature` >= 0 "
            f"(nats; 0: no balancing). Received: {balance_temperature!r}."
        )
    for setting, (value, required) in settings.items():
        if value != required:
            raise ValueError(
                f'`{name}` with top_posterior_family="{SINGLE_PARENT}" '
                f"computes the top layer's presences and needs "
                f"{setting}={required!r}. Received: {setting}={value!r}."
            )
