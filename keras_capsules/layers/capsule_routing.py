"""The capsule contract, and what every routing layer shares."""

import math

import keras
from keras import ops

from keras_capsules.layers import contract, kernel_arguments, validation
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.capsule_votes import capsule_votes

# What to do when the number of input capsules is unknown at build time,
# in the families that name their shared-weights option `share_weights`.
SHARE_WEIGHTS_HINT = (
    " For a number of input capsules that varies, pass share_weights=True."
)


class CapsuleRouting(keras.layers.Layer):
    """The base of the routing layers; speaks the capsule contract.

    The capsule contract: a routing layer maps

    ```none
    [logits (batch, *capsules), poses (batch, *capsules, d_cov, d_in)],
        mask (batch, *capsules)
      -> [logits (batch, n_out), poses (batch, n_out, d_cov, d_out)]
    ```

    where `capsules` is `(n_in,)` for a list of capsules or `(H, W, B)`
    for a grid of `B` capsule types. Capsule i's activation is
    `sigmoid(logits[..., i])` in every family, and its pose a `d_cov x
    d_in` matrix (a vector capsule is `1 x d`). A masked input capsule
    (mask False) changes no output. A family that has no use for the
    grid routes its capsules as a list of `n_in = H W B`.

    The base owns what the families share: the arguments `num_capsules`,
    `capsule_dim`, `kernel_initializer` and `kernel_regularizer` (their
    checks and config), the kernel `W` (`(n_in, n_out, d_in, d_out)`, or
    `(n_out, d_in, d_out)` when every input capsule shares it), the votes
    `V[i, j] = P[i] W[i, j]` (`ops.capsule_votes`), merging the inputs'
    Keras masks, routing in float32 and casting back, and the output
    shapes. A family adds:

    - `num_iterations`: its routing iterations;
    - `_default_kernel_initializer(d_in)`: its initialiser of `W`;
    - `_build_routing(num_inputs, d_cov, d_in, initializer)`: its own
      weights, made after the kernel;
    - `_route(logits, poses, mask)`: float32 `(batch, n_in)` logits, poses
      in the compute dtype and a bool mask or None (grids flattened to
      lists unless `_ROUTES_GRIDS`), to float32 `(logits, poses, ...)`.

    `.keras` files saved before every routing layer took this one form
    load through `layers.legacy` (see `from_config`).

    Args:
        num_capsules: int, output capsules `n_out` (None where the family
            allows one output capsule per input capsule).
        capsule_dim: int, columns `d_out` of each output pose.
        kernel_initializer: initializer of `W`; None for the family's.
        kernel_regularizer: optional regularizer of `W`.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Examples:

        >>> from keras_capsules.layers import DynamicRouting
        >>> routing = DynamicRouting(num_capsules=3,
        ...                          capsule_dim=8)  # one family
        >>> isinstance(routing, CapsuleRouting)
        True
        >>> logits, poses = routing([np.zeros((2, 6)), np.ones((2, 6, 1, 4))])
        >>> tuple(logits.shape), tuple(poses.shape)
        ((2, 3), (2, 3, 1, 8))
    """

    # What to do when the number of input capsules is unknown at build
    # time; the families name their shared-weights option.
    _SHARED_WEIGHTS_HINT = ""
    # Whether the family routes a grid as a grid (the EM class capsules:
    # one W per capsule type, positions added to the votes).
    _ROUTES_GRIDS = False

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        kernel_initializer=None,
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsules = num_capsules
        self.capsule_dim = capsule_dim
        names = ["capsule_dim"]
        if num_capsules is not None or not self._allows_variable_outputs():
            names.insert(0, "num_capsules")
        validation.check_positive_ints(self, names)
        kernel_arguments.set_kernel_arguments(
            self, kernel_initializer, kernel_regularizer
        )
        self.supports_masking = True
        self.on_grid = False

    @classmethod
    def from_config(cls, config):
        """The layer of `config`; a config saved in the family's former
        form (before `contract` was the only form) gives its adapter from
        `layers.legacy`, which computes what that form computed."""
        return contract.from_config(cls, config)

    def _allows_variable_outputs(self):
        """Whether `num_capsules=None` (one output per input) is allowed."""
        return False

    @property
    def shares_input_weights(self):
        """Whether all input capsules use the same weights."""
        return False

    def _contract_shape(self, input_shape):
        """Checks `[logits, poses]` shapes; returns `(n_in, d_cov, d_in)`,
        `n_in` the number of input capsules (of capsule types on a grid
        routed as a grid), None where unknown."""
        shapes = contract.capsule_shapes(
            self, input_shape, self.shares_input_weights, self._ROUTES_GRIDS
        )
        capsules = shapes[0][1:]
        self._capsule_axes = set(range(1, 1 + len(capsules)))
        self.on_grid = self._ROUTES_GRIDS and len(capsules) == 3
        if self.on_grid:
            num_inputs = capsules[-1]
        elif None in capsules:
            num_inputs = None
        else:
            num_inputs = math.prod(capsules)
        return (num_inputs, *shapes[1][-2:])

    def _kernel_shape(self, num_inputs, d_in):
        shape = (self.num_capsules, d_in, self.capsule_dim)  # W_j
        return shape if self.shares_input_weights else (num_inputs, *shape)

    def build(self, input_shape):
        num_inputs, d_cov, d_in = self._contract_shape(input_shape)
        initializer = (
            self.kernel_initializer or self._default_kernel_initializer(d_in)
        )
        self.kernel = self.add_weight(
            name="kernel",
            shape=self._kernel_shape(num_inputs, d_in),
            initializer=initializer,
            regularizer=self.kernel_regularizer,
        )
        self._build_routing(num_inputs, d_cov, d_in, initializer)
        self.input_spec = contract.input_specs(input_shape, self._free_axes())

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        """Adds the family's own weights (none by default)."""

    def _free_axes(self):
        """Input axes whose size may change after build: the capsule axes
        when every input capsule shares the weights, the grid's positions
        when the family routes a grid with weights per type."""
        if self.shares_input_weights:
            return self._capsule_axes
        return {1, 2} if self.on_grid else set()

    def capsule_votes(self, poses, bias=None):
        """`(batch, n_in, n_out, d_cov, d_out)` votes `P[i] W[i, j] (+ B)`
        of `(batch, n_in, d_cov, d_in)` poses, in the compute dtype."""
        return capsule_votes(
            ops.cast(poses, self.compute_dtype),
            self.kernel,
            bias,
            shared=self.shares_input_weights,
        )

    def call(self, inputs, mask=None):
        return self._route_contract_inputs(inputs, mask)[:2]

    def _route_contract_inputs(self, inputs, mask):
        """Every output of `_route` on `[logits, poses]`, in the compute
        dtype."""
        logits, poses = inputs
        mask = combined_input_mask(mask)
        if not self._ROUTES_GRIDS:
            logits, poses, mask = contract.as_list(logits, poses, mask)
        outputs = self._route(
            ops.cast(logits, routing_dtype(self)),
            ops.cast(poses, self.compute_dtype),
            mask,
        )
        return [ops.cast(output, self.compute_dtype) for output in outputs]

    def _num_outputs(self, num_inputs):
        return num_inputs if self.num_capsules is None else self.num_capsules

    def compute_output_shape(self, input_shape):
        (batch, *capsules), poses_shape = input_shape
        count = None if None in capsules else math.prod(capsules)
        num_outputs = self._num_outputs(count)
        return [
            (batch, num_outputs),
            (batch, num_outputs, poses_shape[-2], self.capsule_dim),
        ]

    def compute_mask(self, inputs, mask=None):
        return None  # A fixed set of output capsules is always present.

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "capsule_dim": self.capsule_dim,
            **kernel_arguments.kernel_config(self),
            **contract.MARKER,
        }


def routing_dtype(layer):
    """The dtype `layer` routes in: float32 (float16's range and precision
    lose the variances, log-densities and agreements), or float64 under a
    float64 policy."""
    return "float64" if layer.compute_dtype == "float64" else "float32"
