"""Fully connected capsules routed by agreement (Sabour et al. 2017)."""

import keras
from keras import ops

from keras_capsules.layers import validation
from keras_capsules.layers.capsule_routing import CapsuleRouting
from keras_capsules.ops.dynamic_routing import dynamic_routing
from keras_capsules.ops.squash import safe_norm, squashed_length_logit

# Sabour et al. do not give an initialisation. A normal of std 0.1 gives
# CapsNet's output capsules lengths around 0.5 at the start, away from both
# the flat and the saturated ends of the squash.
_DEFAULT_KERNEL_STDDEV = 0.1


@keras.saving.register_keras_serializable(package="keras_capsules")
class DynamicRouting(CapsuleRouting):
    """Fully connected capsules routed by agreement (Sabour et al., 2017).

    Each input capsule `u_i` votes `u_hat[j|i] = W_ij u_i` for each output
    capsule j; `keras_capsules.ops.dynamic_routing` turns the votes into
    output capsules (Procedure 1). With `share_weights=True` every input
    capsule uses the same `W_j`, so the number of input capsules may vary
    from call to call, and a mask (Keras masking, or the `mask` argument)
    says which inputs take part.

    With `contract=True` the layer speaks the capsule contract (see
    `CapsuleRouting`): inputs `[logits, poses]`, `(batch, n_in)` and
    `(batch, n_in, d_cov, d_in)`, route as the vectors `u_i =
    sigmoid(logit_i) P_i / |P_i|` (length the activation, direction the
    flattened pose; exactly the squashed vectors of a dynamic-routing
    layer before it), and the outputs are `[2 log |s_j|, v_j]`, `(batch,
    n_out)` and `(batch, n_out, d_cov, d_out)`, since `|v_j| =
    sigmoid(2 log |s_j|)`.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, size of each output capsule `d_out`.
        num_iterations: int, routing iterations `r`. Defaults to `3`.
        share_weights: bool, one `W_j` for all input capsules. Defaults to
            `False` (a `W_ij` per input and output pair, as in CapsNet).
        kernel_initializer: initializer of the kernel. Defaults to a normal
            of standard deviation 0.1.
        kernel_regularizer: optional regularizer of the kernel.
        contract: bool, take and return `[logits, poses]`. Defaults to
            `False`.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, n_in, d_in)` input capsules (or `[logits,
            poses]` with `contract=True`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `(batch, n_out, d_out)` output capsules, each of length < 1 (or
        `[logits, poses]` with `contract=True`).

    Example:

    >>> layer = DynamicRouting(num_capsules=10, capsule_dim=16)
    >>> layer(np.zeros((2, 1152, 8))).shape
    TensorShape([2, 10, 16])
    """

    _SHARED_WEIGHTS_HINT = (
        " For a number of input capsules that varies, pass share_weights=True."
    )

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        share_weights=False,
        kernel_initializer=None,
        kernel_regularizer=None,
        contract=False,
        **kwargs,
    ):
        super().__init__(
            num_capsules,
            capsule_dim,
            num_iterations,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            contract=contract,
            **kwargs,
        )
        self.share_weights = bool(share_weights)

    @property
    def shares_input_weights(self):
        return self.share_weights

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=_DEFAULT_KERNEL_STDDEV)

    def _own_form_shape(self, input_shape):
        _, num_inputs, d_in = validation.capsule_shape(
            self, input_shape, allow_unknown_count=self.share_weights
        )
        return num_inputs, 1, d_in

    def _call_own_form(self, inputs, mask):
        inputs = ops.cast(inputs, self.compute_dtype)
        _, capsules = self._route(None, inputs[:, :, None, :], mask)
        return ops.cast(capsules[:, :, 0, :], self.compute_dtype)

    def _route(self, logits, poses, mask):
        # Route in float32: float16 agreement sums lose precision.
        votes = ops.cast(self.capsule_votes(poses), "float32")
        if logits is not None:  # u_i = sigmoid(logit_i) P_i / |P_i|.
            lengths = ops.sigmoid(logits) / safe_norm(
                ops.cast(poses, "float32"), axis=(-2, -1)
            )
            votes = votes * lengths[:, :, None, None, None]
        shape = ops.shape(votes)
        d_cov, d_out = votes.shape[-2], votes.shape[-1]
        capsules = dynamic_routing(
            ops.reshape(
                votes, (shape[0], shape[1], self.num_capsules, d_cov * d_out)
            ),
            self.num_iterations,
            mask=mask,
        )
        capsules = ops.reshape(
            capsules, (shape[0], self.num_capsules, d_cov, d_out)
        )
        return squashed_length_logit(capsules, axis=(-2, -1)), capsules

    def votes(self, inputs):
        """Returns the votes `u_hat[j|i] = W_ij u_i`, `(batch, n_in, n_out,
        d_out)`, in the compute dtype."""
        inputs = ops.cast(inputs, self.compute_dtype)
        return self.capsule_votes(inputs[:, :, None, :])[:, :, :, 0, :]

    def _own_output_shape(self, input_shape):
        return (input_shape[0], self.num_capsules, self.capsule_dim)

    def get_config(self):
        return {**super().get_config(), "share_weights": self.share_weights}
