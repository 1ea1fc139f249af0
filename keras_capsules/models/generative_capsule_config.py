"""The settings of the generative capsule autoencoder, one frozen object:
its sizes, its generative model's scales and how it infers the top
layer. Named presets: `GenerativeCapsuleConfig.PRESETS`."""

import dataclasses
import numbers

from keras_capsules.layers import generative_capsule_decoder as decoder_layer
from keras_capsules.ops.settings import Settings

POSE_POSTERIORS = ("delta", "gaussian")
# `top_posterior_family`: the paper's independent top capsules, or one
# parent present (`distributions.SingleParentPosterior`).
MEAN_FIELD = "mean_field"
SINGLE_PARENT = "single_parent"
TOP_POSTERIOR_FAMILIES = (MEAN_FIELD, SINGLE_PARENT)


def _steps(name, value):
    if isinstance(value, bool) or not (
        isinstance(value, numbers.Integral) and value >= 0
    ):
        raise ValueError(
            f"`GenerativeCapsuleConfig` expects `{name}` to be an int >= 0 "
            f"(0: the encoder's values). Received: {name}={value!r}."
        )


# The fields that are `layers.GenerativeCapsuleDecoder` arguments.
DECODER_FIELDS = (
    *decoder_layer.SIZES,
    *decoder_layer.SCALES,
    "initial_pose_scale",
)
# The settings that model configs of earlier releases gave as separate
# arguments.
_FORMER_INFERENCE_FIELDS = (
    "pose_posterior",
    "top_pose_refinement_steps",
    "top_presence_refinement_steps",
    "top_posterior_family",
    "single_parent_balance_temperature",
)
# Training options of earlier releases, removed as the measurements of
# research/generative_capsules_top_layer.md found they did not help.
_REMOVED_TRAINING_OPTIONS = (
    "top_kl_warmup_steps",
    "stop_gradient_between_layers",
    "presence_information_weight",
    "selection_information_weight",
    "template_presence_information_weight",
    "template_count_weight",
    "template_count_target",
    "binary_top_presence_draws",
)


@dataclasses.dataclass(frozen=True)
class GenerativeCapsuleConfig(Settings):
    """The generative capsule autoencoder's settings (Smith, Schut, Gal,
    van der Wilk 2020). The defaults are the paper's configuration
    (section 4, supplementary B) with its amortised inference, the
    `"paper"` preset.

    Args:
        num_top_capsules: int, `n0` (16).
        num_template_capsules: int, `n1` (16).
        template_size: int, side of the square templates (12).
        template_channels: int, channels of the template encoder's
            convolutions (32).
        pose_posterior: `"delta"` (MAP poses, the paper's) or
            `"gaussian"`.
        pixel_scale: pixel noise std `sigma` (eq. 7; 0.2).
        min_pose_scale: lower bound of the learned pose stds `c_ij` (0.1).
        initial_pose_scale: `c_ij` at initialisation, above
            `min_pose_scale`; None for 1.5 `min_pose_scale`. A wide start
            (0.79) left the template poses' density too flat to learn
            from (bound 506 against 621 nats per digit after 2 epochs).
        clutter_affinity: `rho_0j` of the dummy parent (0.1).
        clutter_pose_scale: pose std `c_0j` of clutter (1.0).
        off_pose_scale: pose std `lambda_off` of absent capsules (eq. 6,
            which the paper does not give; 1.0).
        top_pose_refinement_steps: int >= 0: the top layer's poses take
            this many exact EM steps from the top encoder's toward the
            poses that best explain the template poses (the bound stays a
            bound). 0 is the paper's amortised inference; 3 puts the
            class in the top poses.
        top_presence_refinement_steps: int >= 0: then the top presences
            take this many mean-field steps
            (`distributions.parent_presence_logits`). 0: the encoder's.
        top_posterior_family: `"mean_field"` (the paper's: each top
            capsule present or not on its own) or `"single_parent"`:
            exactly one top capsule is present, its posterior computed
            exactly from each parent's fit
            (`distributions.SingleParentPosterior`; delta poses, no
            presence steps).
        single_parent_balance_temperature: float >= 0, with a single
            parent: each training batch's posterior is the assignment
            closest to it that gives every parent an equal share, at this
            temperature in nats (`distributions.balanced_assignments`); 0
            trains on the exact posterior.

    Examples:

        >>> config = GenerativeCapsuleConfig(num_top_capsules=4)
        >>> refined = config.replace(top_pose_refinement_steps=3)
        >>> refined.top_pose_refinement_steps
        3
    """

    KIND = "generative capsule"

    num_top_capsules: int = 16
    num_template_capsules: int = 16
    template_size: int = 12
    template_channels: int = 32
    pose_posterior: str = "delta"
    pixel_scale: float = 0.2
    min_pose_scale: float = 0.1
    initial_pose_scale: float | None = None
    clutter_affinity: float = 0.1
    clutter_pose_scale: float = 1.0
    off_pose_scale: float = 1.0
    top_pose_refinement_steps: int = 0
    top_presence_refinement_steps: int = 0
    top_posterior_family: str = MEAN_FIELD
    single_parent_balance_temperature: float = 0.0

    def __post_init__(self):
        self._check_positive_ints(*decoder_layer.SIZES, "template_channels")
        self._check_positive(*decoder_layer.SCALES)
        if self.initial_pose_scale is not None and not (
            self.initial_pose_scale > self.min_pose_scale
        ):
            raise ValueError(
                "`GenerativeCapsuleConfig` expects `initial_pose_scale` > "
                f"`min_pose_scale` ({self.min_pose_scale!r}), or None. "
                f"Received: initial_pose_scale={self.initial_pose_scale!r}."
            )
        for name in (
            "top_pose_refinement_steps",
            "top_presence_refinement_steps",
        ):
            _steps(name, getattr(self, name))
        self._check_inference()

    def _check_inference(self):
        self._check_options(
            pose_posterior=POSE_POSTERIORS,
            top_posterior_family=TOP_POSTERIOR_FAMILIES,
        )
        temperature = self.single_parent_balance_temperature
        if not temperature >= 0:
            raise ValueError(
                "`GenerativeCapsuleConfig` expects "
                "`single_parent_balance_temperature` >= 0 (nats; 0: no "
                f"balancing). Received: {temperature!r}."
            )
        if self.top_posterior_family == MEAN_FIELD and temperature:
            raise ValueError(
                "`GenerativeCapsuleConfig` balances single parents only: "
                "`single_parent_balance_temperature` needs "
                f'`top_posterior_family="{SINGLE_PARENT}"`. Received: '
                f"{temperature!r} with the mean field. Set it to 0 or change "
                "the family."
            )
        if self.top_posterior_family == SINGLE_PARENT:
            for name, required in (
                ("pose_posterior", "delta"),
                ("top_presence_refinement_steps", 0),
            ):
                if getattr(self, name) != required:
                    raise ValueError(
                        "`GenerativeCapsuleConfig` with top_posterior_family="
                        f'"{SINGLE_PARENT}" computes the top layer\'s '
                        f"presences and needs {name}={required!r}. "
                        f"Received: {name}={getattr(self, name)!r}."
                    )

    @classmethod
    def of_decoder(cls, decoder, **inference):
        """The settings of a `layers.GenerativeCapsuleDecoder`'s sizes and
        scales, with `inference` fields (the paper's where not given)."""
        fields = {name: getattr(decoder, name) for name in DECODER_FIELDS}
        return cls(**fields, **inference)

    def decoder_arguments(self):
        """The `layers.GenerativeCapsuleDecoder` arguments these settings
        hold, a dict."""
        return {name: getattr(self, name) for name in DECODER_FIELDS}

    @classmethod
    def from_former_config(cls, model_config, decoder):
        """The settings of a `GenerativeCapsuleAutoencoder` config of an
        earlier release, which gave the inference fields as separate
        arguments (popped from `model_config`, with the training options
        since removed: research/README.md), with `decoder`'s sizes."""
        inference = {
            name: model_config.pop(name)
            for name in _FORMER_INFERENCE_FIELDS
            if name in model_config
        }
        for name in _REMOVED_TRAINING_OPTIONS:
            model_config.pop(name, None)
        return cls.of_decoder(decoder, **inference)


# The paper's settings, and the ones whose results the generative capsules
# guide reports.
PRESETS = {
    # The paper's configuration (section 4, supplementary B): 16 top and
    # 16 template capsules, 12x12 templates, the top layer as the
    # encoders infer it.
    "paper": GenerativeCapsuleConfig(),
    # The top poses computed by 3 exact EM steps from the encoder's: the
    # class is then in them (linear probe on (t0, A0) 0.96 on upright
    # MNIST test digits after 5 epochs).
    "computed_top_poses": GenerativeCapsuleConfig(top_pose_refinement_steps=3),
    # One top capsule present, which one computed exactly, the parents
    # balanced over each batch at 1 nat: the presences then carry the
    # class (probe on t0 0.945 after 6 epochs).
    "single_parent": GenerativeCapsuleConfig(
        top_pose_refinement_steps=3,
        top_posterior_family=SINGLE_PARENT,
        single_parent_balance_temperature=1.0,
    ),
    # 32 template and 32 top capsules, top poses and presences computed
    # (the longer CPU runs: probe on (t0, A0) 0.973 after 11 epochs).
    "computed_presences_32": GenerativeCapsuleConfig(
        num_top_capsules=32,
        num_template_capsules=32,
        top_pose_refinement_steps=3,
        top_presence_refinement_steps=1,
    ),
}
GenerativeCapsuleConfig.PRESETS = PRESETS
