"""Self-routing capsules (Hahn, Pyeon, Kim, NeurIPS 2019)."""

import keras
from keras import ops

from keras_capsules.layers.capsule_routing import (
    SHARE_WEIGHTS_HINT,
    CapsuleRouting,
    routing_dtype,
)
from keras_capsules.layers.vector_votes import as_poses, flat_votes
from keras_capsules.ops.self_routing import self_routing


@keras.saving.register_keras_serializable(package="keras_capsules")
class SelfRouting(CapsuleRouting):
    """Capsules that route by their own small networks (Hahn et al. 2019).

    Each input capsule votes `u_hat[j|i] = P_i W_ij` and chooses its
    parents itself: its routing weights `c[i, :] = softmax(vec(P_i)
    W^route_i + b_i)` come from its own pose, by a linear map that the
    layer learns, with no agreement iterations
    (`keras_capsules.ops.self_routing`). A parent's activation is the
    activation-weighted share of the children that route to it, its pose
    their weighted mean vote. The layer speaks the capsule contract:
    input activations are `sigmoid(logits)`, output logits those of the
    parents' activations. The routing weights start at 0 (uniform
    routing), as the authors'. With `share_weights=True` every input
    capsule uses the same `W_j`, `W^route` and `b`, so the number of
    input capsules may vary, and a mask says which take part.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, columns `d_out` of each output pose.
        share_weights: bool, one set of weights for all input capsules.
            Defaults to `False`.
        **kwargs: `kernel_initializer` (of the votes' `W`; by default a
            normal of standard deviation `1 / sqrt(d_in)`, which keeps the
            votes at the scale of the poses), `kernel_regularizer` and base
            layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` and `(batch, n_in,
            d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` logits of the parents'
        activations and `(batch, n_out, d_cov, d_out)` poses.

    Examples:

        >>> layer = SelfRouting(num_capsules=10, capsule_dim=4)
        >>> logits, poses = layer([np.zeros((2, 32)),
        ...                        np.ones((2, 32, 4, 4))])
        >>> tuple(poses.shape)
        (2, 10, 4, 4)
    """

    _SHARED_WEIGHTS_HINT = SHARE_WEIGHTS_HINT

    def __init__(
        self, num_capsules, capsule_dim, share_weights=False, **kwargs
    ):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.share_weights = bool(share_weights)

    @property
    def shares_input_weights(self):
        return self.share_weights

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=d_in**-0.5)

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        per_input = () if self.share_weights else (num_inputs,)
        self.routing_kernel = self.add_weight(  # W^route: (i, c d, j)
            name="routing_kernel",
            shape=(*per_input, d_cov * d_in, self.num_capsules),
            initializer="zeros",
        )
        self.routing_bias = self.add_weight(  # b: (i, j)
            name="routing_bias",
            shape=(*per_input, self.num_capsules),
            initializer="zeros",
        )

    def _route(self, logits, poses, mask):
        dtype = routing_dtype(self)
        shape = ops.shape(poses)
        d_cov, d_in = poses.shape[-2], poses.shape[-1]
        flat_poses = ops.reshape(
            ops.cast(poses, dtype), (shape[0], shape[1], d_cov * d_in)
        )
        kernel = ops.cast(self.routing_kernel, dtype)
        equation = "bid,dj->bij" if self.share_weights else "bid,idj->bij"
        routing_logits = ops.einsum(equation, flat_poses, kernel) + ops.cast(
            self.routing_bias, dtype
        )
        logits, flat = self_routing(
            flat_votes(self, poses), routing_logits, logits, mask=mask
        )
        return logits, as_poses(self, flat, d_cov)

    def get_config(self):
        return {**super().get_config(), "share_weights": self.share_weights}
