"""The generative capsule model (Smith et al., 2020) as TFP distributions."""

from keras_capsules.distributions.binary_top_bound import binary_top_elbo
from keras_capsules.distributions.capsule_conditional import (
    CapsuleConditional,
)
from keras_capsules.distributions.capsule_distribution import (
    CapsuleLayerDistribution,
)
from keras_capsules.distributions.capsule_posterior import CapsulePosterior
from keras_capsules.distributions.capsule_prior import CapsulePrior
from keras_capsules.distributions.elbo import capsule_elbo
from keras_capsules.distributions.generative_capsule_model import (
    GenerativeCapsuleModel,
)
from keras_capsules.distributions.layer_information import (
    explained_by_parents,
    layer_information,
)
from keras_capsules.distributions.parent_poses import (
    parent_pose_step,
    refine_parent_poses,
    refine_parent_poses_given,
)
from keras_capsules.distributions.parent_presences import (
    parent_presence_logits,
)
from keras_capsules.distributions.poses import (
    POSE_DIM,
    affine_matrices,
    pose_deviations,
    predict_child_poses,
)
from keras_capsules.distributions.presences import relaxed_presence
from keras_capsules.distributions.single_parent_bound import (
    single_parent_elbo,
)
from keras_capsules.distributions.single_parent_posterior import (
    CERTAIN_RELAXED_LOGIT,
    SingleParentPosterior,
)
from keras_capsules.distributions.single_parents import (
    balanced_assignments,
    parent_set_scores,
    single_parent_choices,
    single_parent_scores,
    single_parent_terms,
)
from keras_capsules.distributions.template_rendering import (
    alpha_composite,
    render_templates,
    template_image_likelihood,
    warp_templates,
)

__all__ = [
    "CERTAIN_RELAXED_LOGIT",
    "POSE_DIM",
    "CapsuleConditional",
    "CapsuleLayerDistribution",
    "CapsulePosterior",
    "CapsulePrior",
    "GenerativeCapsuleModel",
    "SingleParentPosterior",
    "affine_matrices",
    "alpha_composite",
    "balanced_assignments",
    "binary_top_elbo",
    "capsule_elbo",
    "explained_by_parents",
    "layer_information",
    "parent_pose_step",
    "parent_presence_logits",
    "parent_set_scores",
    "pose_deviations",
    "predict_child_poses",
    "refine_parent_poses",
    "refine_parent_poses_given",
    "relaxed_presence",
    "render_templates",
    "single_parent_choices",
    "single_parent_elbo",
    "single_parent_scores",
    "single_parent_terms",
    "template_image_likelihood",
    "warp_templates",
]
