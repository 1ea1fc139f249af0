"""The generative parameters of Smith et al. (2020) as a Keras layer."""

import keras
import numpy as np
from keras import ops

from keras_capsules import distributions
from keras_capsules.layers import validation

# The Concrete temperature of the relaxed presences: the paper's. Lower
# ones changed nothing the top layer learned (research/
# generative_capsules_top_layer.md), so it is not a setting.
CONCRETE_TEMPERATURE = 1.0
# The decoder's sizes (integers >= 1) and its generative model's scales
# (numbers > 0), by their argument names.
SIZES = ("num_top_capsules", "num_template_capsules", "template_size")
SCALES = (
    "pixel_scale",
    "min_pose_scale",
    "clutter_affinity",
    "clutter_pose_scale",
    "off_pose_scale",
)


@keras.saving.register_keras_serializable(package="keras_capsules")
class GenerativeCapsuleDecoder(keras.layers.Layer):
    """Owns the global parameters of the two-layer generative capsule model
    and builds its distributions (`keras_capsules.distributions`).

    Called on template capsules it renders their image (the mean of
    eq. 7); `generative_model()` gives the full model for sampling, the
    joint density and the bound. The paper's configuration (16 + 16
    capsules, 12x12 templates) has 7,000 parameters (paper: < 30,000).

    Args:
        num_top_capsules: int, `n0`. Defaults to 16.
        num_template_capsules: int, `n1`. Defaults to 16.
        template_size: int, side of the square templates. Defaults to 12.
        image_shape: `(H, W, C)` of the images. Defaults to `(28, 28, 1)`.
        pixel_scale: pixel noise std `sigma` (eq. 7). Defaults to 0.2.
        min_pose_scale: lower bound of the learned pose std `c_ij`
            (supplementary B). Defaults to 0.1.
        initial_pose_scale: `c_ij` at initialisation, > `min_pose_scale`.
            None (the default) starts at 1.5 `min_pose_scale` (0.15).
            The template poses the encoder finds vary by about 0.1 across
            centred digits; a wide start (0.79, softplus at 0) leaves
            their density too flat for the offsets `M_ij` and the top
            layer to be pulled toward them (2 epochs on 20,000 MNIST
            digits: bound 621 vs 506 nats per image).
        clutter_affinity: `rho_0j` of the dummy parent. Defaults to 0.1.
        clutter_pose_scale: pose std `c_0j` of clutter. Defaults to 1.0.
        off_pose_scale: pose std `lambda_off` of absent capsules (eq. 6).
            Defaults to 1.0. At 1.0 switching a template off costs its
            pose about 6 log(1 / c_ij) nats, so every template stays
            present; near `min_pose_scale` templates switch off in some
            digits (research/generative_capsules.md, "Is the top layer used?").
        **kwargs: base layer arguments.

    The prior probability `p` that a top-layer object is present (eq. 1)
    is learned (its logit starting at 0), and the relaxed presences are
    Concrete at temperature `CONCRETE_TEMPERATURE`.

    Call arguments:
        inputs: `[presences, poses]` of the template capsules:
            `(batch, n1)` in [0, 1] and `(batch, n1, 6)`.

    Returns:
        `(batch, H, W, C)` rendered images.

    Examples:

        >>> decoder = GenerativeCapsuleDecoder(num_top_capsules=4,
        ...                                    num_template_capsules=4)
        >>> presences, poses = np.ones((2, 4)), np.zeros((2, 4, 6))
        >>> tuple(decoder([presences, poses]).shape)  # the rendered images
        (2, 28, 28, 1)
        >>> samples = decoder.generative_model().sample(3, seed=0)
    """

    def __init__(
        self,
        num_top_capsules=16,
        num_template_capsules=16,
        template_size=12,
        image_shape=(28, 28, 1),
        pixel_scale=0.2,
        min_pose_scale=0.1,
        initial_pose_scale=None,
        clutter_affinity=0.1,
        clutter_pose_scale=1.0,
        off_pose_scale=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_top_capsules = num_top_capsules
        self.num_template_capsules = num_template_capsules
        self.template_size = template_size
        self.image_shape = tuple(image_shape)
        self.pixel_scale = pixel_scale
        self.min_pose_scale = min_pose_scale
        self.initial_pose_scale = initial_pose_scale
        self.clutter_affinity = clutter_affinity
        self.clutter_pose_scale = clutter_pose_scale
        self.off_pose_scale = off_pose_scale
        self.temperature = CONCRETE_TEMPERATURE
        # A fixed prior probability of a top object, set only by configs of
        # earlier releases (`from_config`); None learns it.
        self._fixed_top_presence_probability = None
        validation.check_positive_ints(self, SIZES)
        for name in SCALES:
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"`GenerativeCapsuleDecoder` expects `{name}` > 0. "
                    f"Received: {name}={getattr(self, name)!r}."
                )
        if initial_pose_scale is None:
            initial_pose_scale = 1.5 * min_pose_scale
        if not initial_pose_scale > self.min_pose_scale:
            raise ValueError(
                "`GenerativeCapsuleDecoder` expects `initial_pose_scale` > "
                f"`min_pose_scale` ({self.min_pose_scale!r}). Received: "
                f"initial_pose_scale={initial_pose_scale!r}."
            )
        self._initial_pose_scale = initial_pose_scale
        if len(self.image_shape) != 3:
            raise ValueError(
                "`GenerativeCapsuleDecoder` expects `image_shape` (H, W, C). "
                f"Received: {self.image_shape}. Grey images have C = 1."
            )

    def build(self, input_shape=None):
        n0, n1 = self.num_top_capsules, self.num_template_capsules
        size, channels = self.template_size, self.image_shape[-1]
        fixed_probability = self._fixed_top_presence_probability
        self.top_presence_logits = self.add_weight(
            name="top_presence_logits",
            shape=(n0,),
            initializer=keras.initializers.Constant(
                0.0
                if fixed_probability is None
                else np.log(fixed_probability / (1 - fixed_probability))
            ),
            trainable=fixed_probability is None,
        )
        self.log_affinities = self.add_weight(
            name="log_affinities", shape=(n0, n1), initializer="zeros"
        )
        # Children of present parents start mostly present; clutter mostly
        # absent.
        presence_logits = np.full((n0 + 1, n1), 2.0, "float32")
        presence_logits[0] = -2.0
        self.presence_logits = self.add_weight(
            name="presence_logits",
            shape=(n0 + 1, n1),
            initializer=keras.initializers.Constant(presence_logits),
        )
        self.pose_offsets = self.add_weight(
            name="pose_offsets",
            shape=(n0, n1, distributions.POSE_DIM),
            initializer=keras.initializers.RandomNormal(stddev=0.3),
        )
        # softplus(raw) = initial - min: the inverse softplus.
        raw_scale = np.log(
            np.expm1(self._initial_pose_scale - self.min_pose_scale)
        )
        self.raw_pose_scales = self.add_weight(
            name="raw_pose_scales",
            shape=(n0, n1),
            initializer=keras.initializers.Constant(raw_scale),
        )
        self.template_logits = self.add_weight(
            name="template_logits",
            shape=(n1, size, size, channels),
            initializer=keras.initializers.RandomNormal(stddev=1.0),
        )
        self.alpha_logits = self.add_weight(
            name="alpha_logits",
            shape=(n1, size, size, 1),
            initializer=keras.initializers.RandomNormal(stddev=1.0),
        )

    def templates(self):
        """`(T, alpha)`: `(n1, s, s, C)` templates and alphas in [0, 1]."""
        return (
            ops.sigmoid(ops.cast(self.template_logits, "float32")),
            ops.sigmoid(ops.cast(self.alpha_logits, "float32")),
        )

    def pose_scales(self):
        """`c_ij = min_pose_scale + softplus(raw)`, `(n0, n1)`."""
        return self.min_pose_scale + ops.softplus(
            ops.cast(self.raw_pose_scales, "float32")
        )

    def generative_model(self, relaxed=True):
        """The `GenerativeCapsuleModel` of the current weights.

        Its parameters are the weights' values as tensors at the call:
        inside a traced training step, call it in the step (as
        `GenerativeCapsuleAutoencoder.bound` does), not once outside,
        where the trace would hold them as constants and train none.

        Args:
            relaxed: Concrete presences at `temperature` (the model the
                bound is trained on), or False for Bernoulli presences.
        """
        if not self.built:  # Its weights do not depend on any input.
            self.build()
        templates, alphas = self.templates()
        return distributions.GenerativeCapsuleModel(
            top_presence_logits=ops.cast(self.top_presence_logits, "float32"),
            log_affinities=ops.cast(self.log_affinities, "float32"),
            presence_logits=ops.cast(self.presence_logits, "float32"),
            pose_offsets=ops.cast(self.pose_offsets, "float32"),
            pose_scales=self.pose_scales(),
            templates=templates,
            alphas=alphas,
            image_size=self.image_shape[:2],
            pixel_scale=self.pixel_scale,
            clutter_log_affinity=float(np.log(self.clutter_affinity)),
            clutter_pose_scale=self.clutter_pose_scale,
            off_pose_scale=self.off_pose_scale,
            temperature=self.temperature if relaxed else None,
        )

    def call(self, inputs):
        presences, poses = inputs
        templates, alphas = self.templates()
        image = distributions.render_templates(
            templates,
            alphas,
            ops.cast(presences, "float32"),
            ops.cast(poses, "float32"),
            self.image_shape[:2],
        )
        return ops.cast(image, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], *self.image_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "num_top_capsules": self.num_top_capsules,
            "num_template_capsules": self.num_template_capsules,
            "template_size": self.template_size,
            "image_shape": self.image_shape,
            "pixel_scale": self.pixel_scale,
            "min_pose_scale": self.min_pose_scale,
            "initial_pose_scale": self.initial_pose_scale,
            "clutter_affinity": self.clutter_affinity,
            "clutter_pose_scale": self.clutter_pose_scale,
            "off_pose_scale": self.off_pose_scale,
            **self._former_config(),
        }

    def _former_config(self):
        """The settings of an earlier release's file that this layer was
        loaded from, where they differ from this release's."""
        config = {}
        if self.temperature != CONCRETE_TEMPERATURE:
            config["temperature"] = self.temperature
        if self._fixed_top_presence_probability is not None:
            config["top_presence_probability"] = (
                self._fixed_top_presence_probability
            )
        return config

    @classmethod
    def from_config(cls, config):
        """The layer of `config`. Configs of earlier releases also gave the
        Concrete temperature and, optionally, a fixed prior probability of
        a top object; the layer keeps them, so that files saved then
        compute what they computed."""
        config = dict(config)
        temperature = config.pop("temperature", CONCRETE_TEMPERATURE)
        probability = config.pop("top_presence_probability", None)
        layer = cls(**config)
        layer.temperature = temperature
        layer._fixed_top_presence_probability = probability
        return layer
