"""The generative capsule model (Smith et al., 2020) as TFP distributions.

The names below load with their modules, and TensorFlow Probability with
them, at the first use of any of them, not at `import keras_capsules`:
the other families run without TensorFlow Probability (and, on another
Keras backend, without TensorFlow)."""

import importlib
import pkgutil
from typing import TYPE_CHECKING

from keras_capsules.tensorflow_parts import require_tensorflow

if TYPE_CHECKING:  # The names as the API reference and type checkers see them.
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
    from keras_capsules.distributions.posterior_information import (
        explained_by_parents,
        layer_information,
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


def __getattr__(name):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _bind_public_names()
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _bind_public_names():
    """Imports every module of the package and binds the names of
    `__all__` here, so that later uses do not call `__getattr__`."""
    require_tensorflow(__name__)
    modules = [
        importlib.import_module(f"{__name__}.{module.name}")
        for module in pkgutil.iter_modules(__path__)
    ]
    for name in __all__:
        globals()[name] = next(
            vars(module)[name] for module in modules if name in vars(module)
        )
