"""Capsules routed by inverted dot-product attention (Tsai, Srivastava,
Goh, Salakhutdinov, ICLR 2020)."""

import math

import keras
from keras import ops

from keras_capsules.layers.capsule_routing import CapsuleRouting, routing_dtype
from keras_capsules.layers.vector_votes import as_poses, flat_votes
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.inverted_attention_routing import (
    inverted_attention_routing,
)


@keras.saving.register_keras_serializable(package="keras_capsules")
class InvertedAttentionRouting(CapsuleRouting):
    """Capsules routed by inverted dot-product attention (Tsai et al.
    2020).

    Each input capsule votes `V[i, j] = P_i W_ij`, and
    `keras_capsules.ops.inverted_attention_routing` turns the votes into
    layer-normalised parent poses: children route to the parents whose
    poses agree with their votes (softmax over the parents), starting
    from uniform routing. The layer speaks the capsule contract: the
    paper's capsules have poses only, so the input logits are not used (a
    mask still says which inputs take part), and the paper defines no
    activation of a parent. The output logit is the authors' classifier
    over the parent poses, `logit_j = w . vec(p_j) + b`, one `w` and `b`
    for every parent (their "fixed classifier for all class capsules"):
    a parent's presence is what a linear read-out of its normalised pose
    says, and a layer's logits need no other weights than the model's.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, columns `d_out` of each output pose.
        num_iterations: int, routing iterations (the first is uniform
            routing). Defaults to `2`.
        **kwargs: `kernel_initializer` (by default the authors': a normal
            of standard deviation `sqrt(n_out / (d_in n_in))`),
            `kernel_regularizer` and base layer arguments (`name`,
            `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` (not used) and `(batch,
            n_in, d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` read-out logits and `(batch,
        n_out, d_cov, d_out)` layer-normalised poses.

    Examples:

        >>> layer = InvertedAttentionRouting(num_capsules=10, capsule_dim=4)
        >>> logits, poses = layer([np.zeros((2, 32)),
        ...                        np.ones((2, 32, 4, 4))])
        >>> tuple(poses.shape)
        (2, 10, 4, 4)
    """

    def __init__(self, num_capsules, capsule_dim, num_iterations=2, **kwargs):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.num_iterations = positive_int(
            type(self).__name__, "num_iterations", num_iterations
        )

    def _default_kernel_initializer(self, d_in):
        # Keras's fan-in of the kernel (n_in, n_out, d_in, d_out) is
        # n_in n_out d_in; a scale of n_out^2 gives the authors' variance
        # n_out / (n_in d_in).
        return keras.initializers.VarianceScaling(
            scale=float(self.num_capsules) ** 2,
            mode="fan_in",
            distribution="untruncated_normal",
        )

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        size = d_cov * self.capsule_dim  # e: a flattened pose.
        self.norm_scale = self.add_weight(
            name="norm_scale", shape=(size,), initializer="ones"
        )
        self.norm_offset = self.add_weight(
            name="norm_offset", shape=(size,), initializer="zeros"
        )
        # As PyTorch's nn.Linear, the authors' read-out.
        bound = 1.0 / math.sqrt(size)
        self.readout_kernel = self.add_weight(
            name="readout_kernel",
            shape=(size,),
            initializer=keras.initializers.RandomUniform(-bound, bound),
        )
        self.readout_bias = self.add_weight(
            name="readout_bias", shape=(), initializer="zeros"
        )

    def _route(self, logits, poses, mask):
        dtype = routing_dtype(self)
        flat = inverted_attention_routing(
            flat_votes(self, poses),
            self.num_iterations,
            scale=ops.cast(self.norm_scale, dtype),
            offset=ops.cast(self.norm_offset, dtype),
            mask=mask,
        )  # (b, j, e)
        readout = ops.cast(self.readout_kernel, dtype)
        logits = ops.einsum("bje,e->bj", flat, readout) + ops.cast(
            self.readout_bias, dtype
        )
        return logits, as_poses(self, flat, poses.shape[-2])

    def get_config(self):
        return {**super().get_config(), "num_iterations": self.num_iterations}
