"""Fully connected capsules routed by agreement (Sabour et al. 2017)."""

import keras
from keras import ops

from keras_capsules.layers import validation
from keras_capsules.ops.dynamic_routing import dynamic_routing

# Sabour et al. do not give an initialisation. A normal of std 0.1 gives
# CapsNet's output capsules lengths around 0.5 at the start, away from both
# the flat and the saturated ends of the squash.
_DEFAULT_KERNEL_STDDEV = 0.1


@keras.saving.register_keras_serializable(package="keras_capsules")
class DynamicRouting(keras.layers.Layer):
    """Fully connected capsules routed by agreement (Sabour et al., 2017).

    Each input capsule `u_i` votes `u_hat[j|i] = W_ij u_i` for each output
    capsule j; `keras_capsules.ops.dynamic_routing` turns the votes into
    output capsules (Procedure 1). With `share_weights=True` every input
    capsule uses the same `W_j`, so the number of input capsules may vary
    from call to call, and a mask (Keras masking, or the `mask` argument)
    says which inputs take part.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, size of each output capsule `d_out`.
        num_iterations: int, routing iterations `r`. Defaults to `3`.
        share_weights: bool, one `W_j` for all input capsules. Defaults to
            `False` (a `W_ij` per input and output pair, as in CapsNet).
        kernel_initializer: initializer of the kernel. Defaults to a normal
            of standard deviation 0.1.
        kernel_regularizer: optional regularizer of the kernel.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, n_in, d_in)` input capsules.
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `(batch, n_out, d_out)` output capsules, each of length < 1.

    Example:

    >>> layer = DynamicRouting(num_capsules=10, capsule_dim=16)
    >>> layer(np.zeros((2, 1152, 8))).shape
    TensorShape([2, 10, 16])
    """

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        share_weights=False,
        kernel_initializer=None,
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsules = num_capsules
        self.capsule_dim = capsule_dim
        self.num_iterations = num_iterations
        validation.check_positive_ints(
            self, ["num_capsules", "capsule_dim", "num_iterations"]
        )
        self.share_weights = bool(share_weights)
        self.kernel_initializer = keras.initializers.get(
            kernel_initializer
            or keras.initializers.RandomNormal(stddev=_DEFAULT_KERNEL_STDDEV)
        )
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        _, n_in, d_in = validation.capsule_shape(
            self, input_shape, allow_unknown_count=self.share_weights
        )
        shape = (self.num_capsules, d_in, self.capsule_dim)  # W_j
        if not self.share_weights:
            shape = (n_in, *shape)  # W_ij
        self.kernel = self.add_weight(
            name="kernel",
            shape=shape,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )

    def call(self, inputs, mask=None):
        inputs = ops.cast(inputs, self.compute_dtype)
        votes = self.votes(inputs)
        # Route in float32: float16 agreement sums lose precision.
        capsules = dynamic_routing(
            ops.cast(votes, "float32"), self.num_iterations, mask=mask
        )
        return ops.cast(capsules, self.compute_dtype)

    def votes(self, inputs):
        """Returns the votes `u_hat[j|i] = W_ij u_i`, `(batch, n_in, n_out,
        d_out)`, in the compute dtype."""
        inputs = ops.cast(inputs, self.compute_dtype)
        kernel = ops.cast(self.kernel, self.compute_dtype)
        batch, num_inputs = ops.shape(inputs)[0], ops.shape(inputs)[1]
        d_in = inputs.shape[-1]
        flat_outputs = self.num_capsules * self.capsule_dim
        if self.share_weights:  # One (b i, d) @ (d, j h) product.
            kernel = ops.reshape(
                ops.transpose(kernel, (1, 0, 2)), (d_in, flat_outputs)
            )
            votes = ops.matmul(ops.reshape(inputs, (-1, d_in)), kernel)
            return ops.reshape(
                votes,
                (batch, num_inputs, self.num_capsules, self.capsule_dim),
            )
        # One (b, d) @ (d, j h) product per input capsule i; an einsum
        # "bid,ijdh->bijh" picks a slower plan in TensorFlow.
        kernel = ops.reshape(
            ops.transpose(kernel, (0, 2, 1, 3)),
            (num_inputs, d_in, flat_outputs),
        )
        votes = ops.matmul(ops.transpose(inputs, (1, 0, 2)), kernel)
        votes = ops.reshape(
            votes, (num_inputs, batch, self.num_capsules, self.capsule_dim)
        )
        return ops.transpose(votes, (1, 0, 2, 3))

    def compute_mask(self, inputs, mask=None):
        return None  # The output capsules are always all present.

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_capsules, self.capsule_dim)

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "capsule_dim": self.capsule_dim,
            "num_iterations": self.num_iterations,
            "share_weights": self.share_weights,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer
            ),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer
            ),
        }
