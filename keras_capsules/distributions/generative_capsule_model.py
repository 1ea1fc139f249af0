"""The two-layer generative capsule model of Smith et al. (2020), section 2.1.

```none
t^0, A^0  ~ CapsulePrior                         eqs. 1-2   (n0 capsules)
t^1, A^1  ~ CapsuleConditional(t^0, A^0)         eqs. 3-6   (n1 templates)
X         ~ template_image_likelihood(t^1, A^1)  eq. 7
```
"""

import tensorflow_probability as tfp

from keras_capsules.distributions import poses as pose_lib
from keras_capsules.distributions import presences as presence_lib
from keras_capsules.distributions.capsule_conditional import (
    CapsuleConditional,
)
from keras_capsules.distributions.capsule_prior import CapsulePrior
from keras_capsules.distributions.template_rendering import (
    template_image_likelihood,
)


class GenerativeCapsuleModel(presence_lib.KeyedByTemperature):
    """The joint `p(t^0, A^0, t^1, A^1, X)`, selections summed out.

    Built from parameter tensors (a `GenerativeCapsuleDecoder` layer owns
    them as weights and builds this object on every call).

    ```none
    paper        argument               shape
    logit(p)     top_presence_logits    (n0,)
    log rho_ij   log_affinities         (n0, n1)
    logit gamma  presence_logits        (n0 + 1, n1), row 0 the dummy parent
    m_ij         pose_offsets           (n0, n1, 6), M_ij = I + m_ij
    c_ij         pose_scales            (n0, n1)
    T_j          templates              (n1, s_h, s_w, C) in [0, 1]
    alpha_j      alphas                 (n1, s_h, s_w, 1) in [0, 1]
    sigma        pixel_scale            scalar
    log rho_0j   clutter_log_affinity   scalar
    c_0j         clutter_pose_scale     scalar
    lambda_off   off_pose_scale         scalar
    ```

    `temperature` None gives the exact model with Bernoulli presences;
    a number gives its Concrete relaxation, on which the bound is trained.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, images = model.sample(4, seed=(0, 1)).values()
        >>> tuple(images.shape)
        (4, 28, 28, 1)
        >>> tuple(model.log_joint(images, top, templates).shape)
        (4,)
    """

    def __init__(
        self,
        top_presence_logits,
        log_affinities,
        presence_logits,
        pose_offsets,
        pose_scales,
        templates,
        alphas,
        image_size,
        pixel_scale,
        clutter_log_affinity,
        clutter_pose_scale,
        off_pose_scale,
        temperature=None,
    ):
        self.top_presence_logits = top_presence_logits
        self.log_affinities = log_affinities
        self.presence_logits = presence_logits
        self.pose_offsets = pose_offsets
        self.pose_scales = pose_scales
        self.templates = templates
        self.alphas = alphas
        self.image_size = tuple(image_size)
        self.pixel_scale = pixel_scale
        self.clutter_log_affinity = clutter_log_affinity
        self.clutter_pose_scale = clutter_pose_scale
        self.off_pose_scale = off_pose_scale
        self.temperature = temperature

    def top_prior(self):
        """`p(t^0, A^0)`: batch shape `()`, event `(n0,)` and `(n0, 6)`."""
        return CapsulePrior(
            self.top_presence_logits, pose_lib.POSE_DIM, self.temperature
        )

    def template_conditional(self, top):
        """`p(t^1, A^1 | t^0, A^0)` for a batch of top-layer events."""
        return self.template_conditional_given(
            presence_lib.presence_values(
                top[self.presence_key], self.temperature
            ),
            top["pose"],
        )

    def template_conditional_given(self, top_presences, top_poses):
        """`p(t^1, A^1 | t^0, A^0)` for top presences given as values in
        [0, 1], `(..., n0)`, and poses `(..., n0, 6)`."""
        return CapsuleConditional(
            top_presences,
            pose_lib.predict_child_poses(top_poses, self.pose_offsets),
            self.log_affinities,
            self.presence_logits,
            self.pose_scales,
            self.clutter_log_affinity,
            self.clutter_pose_scale,
            self.off_pose_scale,
            self.temperature,
        )

    def image_likelihood(self, templates):
        """`p(X | t^1, A^1)`: batch `(batch,)`, event `(H, W, C)`."""
        return template_image_likelihood(
            self.templates,
            self.alphas,
            presence_lib.presence_values(
                templates[self.presence_key], self.temperature
            ),
            templates["pose"],
            self.image_size,
            self.pixel_scale,
        )

    def sample(self, num_samples, seed):
        """Ancestral samples: `{"top": ..., "templates": ..., "image": ...}`."""
        top_seed, template_seed, image_seed = tfp.random.split_seed(seed, 3)
        top = self.top_prior().sample(num_samples, seed=top_seed)
        templates = self.template_conditional(top).sample(seed=template_seed)
        image = self.image_likelihood(templates).sample(seed=image_seed)
        return {"top": top, "templates": templates, "image": image}

    def log_joint(self, images, top, templates):
        """`log p(t^0, A^0, t^1, A^1, X)` per example, `(batch,)`."""
        return (
            self.top_prior().log_prob(top)
            + self.template_conditional(top).log_prob(templates)
            + self.image_likelihood(templates).log_prob(images)
        )
