"""The capsule contract, and what every routing layer shares."""

import keras
from keras import ops

from keras_capsules.layers import kernel_arguments, validation
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.capsule_votes import capsule_votes


class CapsuleRouting(keras.layers.Layer):
    """The base of the routing layers; defines the capsule contract.

    The capsule contract: a capsule layer maps

    ```none
    [logits (batch, n_in), poses (batch, n_in, d_cov, d_in)], mask (batch, n_in)
      -> [logits (batch, n_out), poses (batch, n_out, d_cov, d_out)]
    ```

    Capsule i's activation is `sigmoid(logits[:, i])` in every family, and
    its pose a `d_cov x d_in` matrix (a vector capsule is `1 x d`). A
    masked input capsule (mask False) changes no output. Every routing
    layer speaks the contract when built with `contract=True`, so one
    backbone takes any family; without it each keeps its own form (a
    family's docstring gives it).

    The base owns what the families share: the arguments `num_capsules`,
    `capsule_dim`, `num_iterations`, `kernel_initializer`,
    `kernel_regularizer` and `contract` (their checks and config), the
    kernel `W` (`(n_in, n_out, d_in, d_out)`, or `(n_out, d_in, d_out)`
    when every input capsule shares it), the votes `V[i, j] = P[i] W[i,
    j]` (`ops.capsule_votes`), merging the inputs' Keras masks, routing in
    float32 and casting back, and the output shapes. A family adds:

    - `_default_kernel_initializer(d_in)`: its initialiser of `W`;
    - `_build_routing(num_inputs, d_cov, d_in, initializer)`: its own
      weights, made after the kernel;
    - `_route(logits, poses, mask)`: float32 `(batch, n_in)` logits, poses
      in the compute dtype and a bool mask or None, to float32
      `(logits, poses, ...)` (the contract's two first);
    - for its own form (`contract=False`): `_own_form_shape(input_shape)`
      (returns `(n_in, d_cov, d_in)`), `_call_own_form(inputs, mask)` and
      `_own_output_shape(input_shape)`.

    Args:
        num_capsules: int, output capsules `n_out` (None where the family
            allows one output capsule per input capsule).
        capsule_dim: int, columns `d_out` of each output pose.
        num_iterations: int >= 1, routing iterations.
        kernel_initializer: initializer of `W`; None for the family's.
        kernel_regularizer: optional regularizer of `W`.
        contract: bool, take and return `[logits, poses]`. Defaults to
            `False` (the family's own form).
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).
    """

    # What to do when the number of input capsules is unknown at build
    # time; the families name their shared-weights option.
    _SHARED_WEIGHTS_HINT = ""

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        kernel_initializer=None,
        kernel_regularizer=None,
        contract=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsules = num_capsules
        self.capsule_dim = capsule_dim
        self.num_iterations = num_iterations
        names = ["capsule_dim", "num_iterations"]
        if num_capsules is not None or not self._allows_variable_outputs():
            names.insert(0, "num_capsules")
        validation.check_positive_ints(self, names)
        kernel_arguments.set_kernel_arguments(
            self, kernel_initializer, kernel_regularizer
        )
        self.contract = bool(contract)
        self.supports_masking = True

    def _allows_variable_outputs(self):
        """Whether `num_capsules=None` (one output per input) is allowed."""
        return False

    @property
    def shares_input_weights(self):
        """Whether all input capsules use the same weights."""
        return False

    def _contract_shape(self, input_shape):
        """Checks `[logits, poses]` shapes; returns `(n_in, d_cov, d_in)`."""
        shapes = validation.pair_of_shapes(input_shape)
        known = 2 if self.shares_input_weights else 1
        if (
            shapes is None
            or len(shapes[0]) != 2
            or len(shapes[1]) != 4
            or shapes[0][1] != shapes[1][1]
            or None in shapes[1][known:]
        ):
            count = "any n_in" if self.shares_input_weights else "known n_in"
            raise ValueError(
                f"`{self.name}` expects `[logits, poses]` of shapes (batch, "
                "n_in) and (batch, n_in, d_cov, d_in), with "
                f"{count} and known d_cov, d_in. Received: {input_shape}. "
                "Give vector capsules (batch, n, d) a pose axis of 1, e.g. "
                f"`poses[:, :, None]`.{self._SHARED_WEIGHTS_HINT}"
            )
        return shapes[1][1:]

    def _kernel_shape(self, num_inputs, d_in):
        shape = (self.num_capsules, d_in, self.capsule_dim)  # W_j
        return shape if self.shares_input_weights else (num_inputs, *shape)

    def build(self, input_shape):
        if self.contract:
            num_inputs, d_cov, d_in = self._contract_shape(input_shape)
        else:
            num_inputs, d_cov, d_in = self._own_form_shape(input_shape)
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
        self.input_spec = self._input_specs(input_shape)

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        """Adds the family's own weights (none by default)."""

    def _free_axes(self):
        """Input axes whose size may change after build (the capsule
        count, when every input capsule shares the weights)."""
        return {1} if self.shares_input_weights else set()

    def _input_specs(self, input_shape):
        """Keras `InputSpec`s that hold every input to the sizes the layer
        was built for, but for the batch and `_free_axes`: a call with
        another size then names the layer, the axis and both sizes."""
        single = not validation.is_list_of_shapes(input_shape)
        shapes = [input_shape] if single else list(input_shape)
        free = self._free_axes()
        specs = [
            keras.InputSpec(
                ndim=len(shape),
                axes={
                    axis: size
                    for axis, size in enumerate(tuple(shape))
                    if axis > 0 and axis not in free and size is not None
                },
            )
            for shape in shapes
        ]
        return specs[0] if single else specs

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
        if not self.contract:
            return self._call_own_form(inputs, mask)
        return self._route_contract_inputs(inputs, mask)[:2]

    def _route_contract_inputs(self, inputs, mask):
        """Every output of `_route` on `[logits, poses]`, in the compute
        dtype."""
        logits, poses = inputs
        outputs = self._route(
            ops.cast(logits, "float32"),
            ops.cast(poses, self.compute_dtype),
            combined_input_mask(mask),
        )
        return [ops.cast(output, self.compute_dtype) for output in outputs]

    def _num_outputs(self, num_inputs):
        return num_inputs if self.num_capsules is None else self.num_capsules

    def compute_output_shape(self, input_shape):
        if not self.contract:
            return self._own_output_shape(input_shape)
        (batch, num_inputs), (_, _, d_cov, _) = input_shape
        num_outputs = self._num_outputs(num_inputs)
        return [
            (batch, num_outputs),
            (batch, num_outputs, d_cov, self.capsule_dim),
        ]

    def compute_mask(self, inputs, mask=None):
        return None  # A fixed set of output capsules is always present.

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "capsule_dim": self.capsule_dim,
            "num_iterations": self.num_iterations,
            **kernel_arguments.kernel_config(self),
            "contract": self.contract,
        }
