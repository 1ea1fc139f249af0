"""Convolutional matrix capsules routed by EM (Hinton, Sabour, Frosst
2018, sec. 4)."""

import keras
from keras import ops

from keras_capsules.layers import (
    contract,
    em_activation,
    kernel_arguments,
    validation,
)
from keras_capsules.layers.capsule_routing import routing_dtype
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.capsule_patches import extract_patches
from keras_capsules.ops.capsule_votes import (
    conv_capsule_vote_means,
    conv_capsule_votes,
)
from keras_capsules.ops.compilation import written_once
from keras_capsules.ops.conv_em_routing import conv_em_routing_by_parent


def same_padding(size, kernel_size, strides):
    """`(before, after)` padding that gives `ceil(size / strides)` outputs."""
    outputs = -(-size // strides)
    total = max((outputs - 1) * strides + kernel_size - size, 0)
    return total // 2, total - total // 2


@keras.saving.register_keras_serializable(package="keras_capsules")
class ConvMatrixCapsules(keras.layers.Layer):
    """A convolutional capsule layer: each child in a `K x K` window votes
    `V = M W` for each parent type, and EM routing turns the votes into
    parent poses and activations.

    One `4 x 4` transformation `W[ky, kx, t, c]` per kernel offset, child
    type `t` and parent type `c`, shared across positions. Routing is
    `keras_capsules.ops.conv_em_routing`: a child's assignments are
    normalised over every parent (of every type, at every position) whose
    receptive field holds it. `beta_u` and `beta_a` are learned per parent
    type. The layer speaks the capsule contract on a grid (see
    `CapsuleRouting`): children and parents are `[logits, poses]`, the
    activations `sigmoid(logits)`. The paper's ConvCaps1 and ConvCaps2
    are `ConvMatrixCapsules(32, 3, strides=2)` and
    `ConvMatrixCapsules(32, 3, strides=1)`.

    Args:
        num_capsule_types: int `C`, parent capsule types per position.
        kernel_size: int `K`. Defaults to `3`.
        strides: int. Defaults to `1`.
        padding: `"valid"` (the paper) or `"same"`; `"same"` adds children
            of activation 0 around the grid. Defaults to `"valid"`.
        routing: `EMRouting` settings or the name of one of its presets,
            as for `MatrixCapsuleEMRouting`.
        kernel_initializer: initializer of `W`. Defaults to a truncated
            normal of standard deviation 0.5, which keeps votes at the scale
            of the poses.
        kernel_regularizer: optional regularizer of `W`.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, H, W, B)` and
            `(batch, H, W, B, 4, 4)`.
        mask: optional bool `(batch, H, W, B)`, True for children that take
            part.

    Returns:
        `[logits, poses]`: `(batch, H', W', C)` activation logits and
        `(batch, H', W', C, 4, 4)` poses, `H' = (H - K) // strides + 1` for
        `"valid"`.

    Examples:

        >>> layer = ConvMatrixCapsules(4, kernel_size=3, strides=2)
        >>> logits, poses = layer([np.zeros((2, 7, 7, 3)),
        ...                        np.ones((2, 7, 7, 3, 4, 4))])
        >>> tuple(poses.shape)
        (2, 3, 3, 4, 4, 4)
    """

    def __init__(
        self,
        num_capsule_types,
        kernel_size=3,
        strides=1,
        padding="valid",
        routing=None,
        kernel_initializer=None,
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsule_types = num_capsule_types
        self.kernel_size = kernel_size
        self.strides = strides
        validation.check_positive_ints(
            self, ["num_capsule_types", "kernel_size", "strides"]
        )
        validation.set_window(self, self.kernel_size, self.strides, padding)
        em_activation.set_routing(self, routing, self.num_capsule_types)
        kernel_arguments.set_kernel_arguments(
            self,
            kernel_initializer
            or keras.initializers.TruncatedNormal(stddev=0.5),
            kernel_regularizer,
        )
        self.supports_masking = True

    @classmethod
    def from_config(cls, config):
        return contract.from_config(cls, config)

    @property
    def num_iterations(self):
        """Routing iterations (`routing.num_iterations`)."""
        return self.routing.num_iterations

    def build(self, input_shape):
        _, height, width, child_types = validation.matrix_capsule_shapes(
            self, input_shape, grid_only=True
        )
        if height is None or width is None:
            raise ValueError(
                f"`{self.name}` needs the grid size when it is built. "
                f"Received: {input_shape}. Give the model a fixed "
                "`input_shape`."
            )
        if self.padding == "valid":
            for size in (height, width):
                if size < self.kernel_size:
                    raise ValueError(
                        f"`{self.name}` needs a grid of at least "
                        f"{self.kernel_size}x{self.kernel_size} capsules with "
                        f"padding='valid'. Received: {input_shape}. Use "
                        "padding='same' or a smaller kernel."
                    )
        kernel = self.kernel_size
        self.kernel = self.add_weight(  # W[ky, kx, t, c]: 4x4 each
            name="kernel",
            shape=(kernel, kernel, child_types, self.num_capsule_types, 4, 4),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        em_activation.add_weights(self, self.num_capsule_types)
        # Any grid size, but the child types the kernel was built for.
        self.input_spec = contract.input_specs(input_shape, {1, 2})

    def _pad(self, grid, value_axes):
        if self.padding == "valid":
            return grid
        rows = same_padding(grid.shape[1], self.kernel_size, self.strides)
        columns = same_padding(grid.shape[2], self.kernel_size, self.strides)
        return ops.pad(grid, [[0, 0], rows, columns] + [[0, 0]] * value_axes)

    def call(self, inputs, mask=None):
        logits, poses = inputs
        dtype = routing_dtype(self)
        activations = ops.sigmoid(ops.cast(logits, dtype))
        return self._route(activations, poses, combined_input_mask(mask), True)

    def _route(self, activations, poses, mask, return_logits):
        """`[activations or logits, poses]` of the parents, in the compute
        dtype, from child activations."""
        dtype = routing_dtype(self)
        if mask is not None:
            activations = activations * ops.cast(mask, activations.dtype)
        # Under XLA the grids' gradients, sums of K x K shifted copies,
        # are then written once: otherwise every operation that reads
        # them (the previous layer's bias gradient, a sum over the grid)
        # re-adds the K x K copies inside its own loop.
        activations = written_once(self._pad(activations, 1))
        patches = written_once(self._pad(poses, 3))
        patches = extract_patches(patches, self.kernel_size, self.strides)
        # (batch, H', W', C, K, K, B, 4, 4): parent types first, the
        # layout the routing sums in.
        votes = conv_capsule_votes(patches, self.kernel)
        shape = ops.shape(votes)
        # The activation-weighted mean vote that the routing centres the
        # votes on, from the patches: it reads no vote-sized tensor.
        vote_offset = conv_capsule_vote_means(
            ops.cast(patches, dtype),
            ops.cast(self.kernel, dtype),
            extract_patches(
                ops.cast(activations, dtype),
                self.kernel_size,
                self.strides,
            ),
        )
        # Route in float32 (float64 under a float64 policy).
        parents, means, _ = conv_em_routing_by_parent(
            ops.cast(ops.reshape(votes, (*shape[:7], 16)), dtype),
            ops.cast(activations, dtype),
            ops.cast(self.beta_u, dtype),
            ops.cast(self.beta_a, dtype),
            self.inverse_temperature_weight,
            self.strides,
            cost=em_activation.op_cost(
                self, self.kernel_size**2 * self.kernel.shape[2]
            ),
            vote_offset=ops.reshape(
                vote_offset, (*ops.shape(vote_offset)[:4], 16)
            ),
            return_logits=return_logits,
        )
        return [
            ops.cast(parents, self.compute_dtype),
            ops.cast(
                ops.reshape(means, (*ops.shape(means)[:4], 4, 4)),
                self.compute_dtype,
            ),
        ]

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        batch, height, width, _ = input_shape[0]

        def parents(size):
            if size is None:
                return None
            if self.padding == "same":
                return -(-size // self.strides)
            return (size - self.kernel_size) // self.strides + 1

        grid = (batch, parents(height), parents(width), self.num_capsule_types)
        return [grid, (*grid, 4, 4)]

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsule_types": self.num_capsule_types,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            **em_activation.config(self),
            **kernel_arguments.kernel_config(self),
            **contract.MARKER,
        }
