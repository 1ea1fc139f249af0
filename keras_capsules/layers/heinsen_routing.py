"""Capsules routed with E-, D- and M-steps (Heinsen 2019, sec. 3)."""

import keras
from keras import ops

from keras_capsules.layers import validation
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.heinsen_routing import (
    DEFAULT_EPSILON,
    check_epsilon,
    heinsen_routing,
)
from keras_capsules.ops.heinsen_routing_linear import heinsen_routing_linear

_INPUT_COUNTS = ("fixed", "variable")


@keras.saving.register_keras_serializable(package="keras_capsules")
class HeinsenRouting(keras.layers.Layer):
    """Routes scored capsules to scored capsules (Heinsen, 2019).

    Each input capsule `mu_inp[i]` (a `d_cov x d_in` matrix) votes
    `V[i, j] = mu_inp[i] W + B` for each output capsule j, and
    `keras_capsules.ops.heinsen_routing` (Algorithm 1) turns the votes and
    the input scores into output scores, capsules and variances. Three
    modes, by how many capsules are known when the layer is built:

    - fixed inputs (`num_inputs="fixed"`, the default): weights per input
      and output pair, `W[i, j]` `(d_in, d_out)`, `B[i, j]` `(d_cov, d_out)`,
      betas `(n_in, n_out)`;
    - variable inputs (`num_inputs="variable"`): weights per output only
      (`W[j]`, `B[j]`, betas `(n_out,)`), so any number of input capsules
      may come, and a Keras mask (or the `mask` argument) marks padding;
    - variable outputs (`num_capsules=None`): one output capsule per input
      capsule and one `W`, `B` and beta pair for all of them (the paper's
      sec. 3.1.1). Shared weights alone give every output the same votes, so
      the outputs would stay identical; here output j also receives
      `mu_inp[j] A` in every vote, `V[i, j] = mu_inp[i] W + mu_inp[j] A + B`
      (`A` anchors output j at input j), which breaks the symmetry. The
      input mask is also the output mask: padded outputs take no share of
      any input, and the mask passes on to the next layer.

    `tie_betas=True` makes `beta_ign` the same weight as `beta_use` (the
    paper's sec. 3.3 option). Initialisation as in the paper: `W` (and `A`)
    normal with standard deviation `1 / d_in`, `B` and the betas zero.

    Args:
        num_capsules: int, output capsules `n_out`; None for one output
            capsule per input capsule (variable outputs).
        capsule_dim: int, columns `d_out` of each output capsule; output
            capsules are `d_cov x d_out`, with the inputs' `d_cov`.
        num_iterations: int >= 1, routing iterations. Defaults to `3`.
        num_inputs: `"fixed"` (weights per input capsule) or `"variable"`
            (weights shared across input capsules). Ignored, as variable,
            when `num_capsules` is None.
        tie_betas: bool, `beta_ign = beta_use`. Defaults to `False`.
        kernel_initializer: initializer of `W` (and `A`). Defaults to a
            normal of standard deviation `1 / d_in`.
        kernel_regularizer: optional regularizer of `W` (and `A`).
        epsilon: positive float added to the use totals and the variances
            (see `ops.heinsen_routing`). Defaults to 1e-5, the author's
            code's value.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[scores, capsules]`: `(batch, n_in)` input scores
            (logits; the paper's `a_inp`) and `(batch, n_in, d_cov, d_in)`
            input capsules.
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part; a masked input acts as a score of minus infinity.

    Returns:
        `[scores, capsules, variances]`: `(batch, n_out)` output logits and
        `(batch, n_out, d_cov, d_out)` means and variances of the outputs'
        Gaussian models.

    Example:

    >>> layer = HeinsenRouting(num_capsules=5, capsule_dim=4)
    >>> scores, capsules, variances = layer(
    ...     [np.zeros((2, 64)), np.ones((2, 64, 4, 4))])
    >>> capsules.shape
    TensorShape([2, 5, 4, 4])
    """

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        num_inputs="fixed",
        tie_betas=False,
        kernel_initializer=None,
        kernel_regularizer=None,
        epsilon=DEFAULT_EPSILON,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_epsilon(self.name, epsilon)
        self.epsilon = float(epsilon)
        self.num_capsules = num_capsules
        self.capsule_dim = capsule_dim
        self.num_iterations = num_iterations
        names = ["capsule_dim", "num_iterations"]
        if num_capsules is not None:
            names.insert(0, "num_capsules")
        validation.check_positive_ints(self, names)
        validation.check_option(self, "num_inputs", num_inputs, _INPUT_COUNTS)
        self.num_inputs = num_inputs
        self.tie_betas = bool(tie_betas)
        self.kernel_initializer = (
            None
            if kernel_initializer is None
            else keras.initializers.get(kernel_initializer)
        )
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    @property
    def variable_outputs(self):
        """Whether there is one output capsule per input capsule."""
        return self.num_capsules is None

    @property
    def shares_input_weights(self):
        """Whether all input capsules use the same weights."""
        return self.variable_outputs or self.num_inputs == "variable"

    def _split_shapes(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) != 2:
            raise ValueError(
                f"`{self.name}` expects two inputs, [scores (batch, n_in), "
                "capsules (batch, n_in, d_cov, d_in)]. Received input shape "
                f"{input_shape}."
            )
        scores_shape, capsules_shape = (tuple(s) for s in input_shape)
        unknown = (
            capsules_shape[2:]
            if self.shares_input_weights
            else (capsules_shape[1:])
        )
        if (
            len(scores_shape) != 2
            or len(capsules_shape) != 4
            or None in unknown
        ):
            count = "any n_in" if self.shares_input_weights else "known n_in"
            hint = (
                ""
                if self.shares_input_weights
                else " For a number of input capsules that varies, pass "
                "num_inputs='variable'."
            )
            raise ValueError(
                f"`{self.name}` expects scores of shape (batch, n_in) and "
                f"capsules of shape (batch, n_in, d_cov, d_in) with {count} "
                f"and known d_cov, d_in. Received: scores {scores_shape}, "
                f"capsules {capsules_shape}.{hint}"
            )
        return scores_shape, capsules_shape

    def build(self, input_shape):
        _, (_, n_in, d_cov, d_in) = self._split_shapes(input_shape)
        initializer = (
            self.kernel_initializer
            or keras.initializers.RandomNormal(stddev=1.0 / d_in)
        )
        if self.variable_outputs:
            pair_shape = ()  # One W, B and beta for every (i, j).
            beta_shape = (1,)
        elif self.num_inputs == "variable":
            pair_shape = (self.num_capsules,)  # W_j, B_j, beta_j.
            beta_shape = pair_shape
        else:
            pair_shape = (n_in, self.num_capsules)  # W_ij, B_ij, beta_ij.
            beta_shape = pair_shape
        self.kernel = self.add_weight(
            name="kernel",
            shape=(*pair_shape, d_in, self.capsule_dim),
            initializer=initializer,
            regularizer=self.kernel_regularizer,
        )
        self.bias = self.add_weight(
            name="bias",
            shape=(*pair_shape, d_cov, self.capsule_dim),
            initializer="zeros",
        )
        if self.variable_outputs:
            self.anchor_kernel = self.add_weight(
                name="anchor_kernel",
                shape=(d_in, self.capsule_dim),
                initializer=initializer,
                regularizer=self.kernel_regularizer,
            )
        self.beta_use = self.add_weight(
            name="beta_use", shape=beta_shape, initializer="zeros"
        )
        if not self.tie_betas:
            self.beta_ign = self.add_weight(
                name="beta_ign", shape=beta_shape, initializer="zeros"
            )

    def call(self, inputs, mask=None):
        scores, capsules = inputs
        mask = combined_input_mask(mask)
        capsules = ops.cast(capsules, self.compute_dtype)
        beta_use = ops.cast(self.beta_use, "float32")
        beta_ign = (
            beta_use if self.tie_betas else ops.cast(self.beta_ign, "float32")
        )
        scores = ops.cast(scores, "float32")
        # Route in float32: half-precision Gaussian log-densities overflow.
        d_in = capsules.shape[-1]
        if self.shares_input_weights and d_in * d_in <= 4 * self.capsule_dim:
            # Votes are one linear map of the inputs: route from moments
            # of the inputs, never forming the votes. The moments cost
            # d_in^2 per (input, output) pair against d_out for the votes,
            # so wide inputs (SST's 1x64 -> 1x2) route the votes instead.
            kernel, bias = self._linear_vote_weights(capsules)
            output_scores, means, variances = heinsen_routing_linear(
                scores,
                ops.cast(capsules, "float32"),
                kernel,
                bias,
                beta_use,
                beta_ign,
                self.num_iterations,
                mask=mask,
                output_mask=mask if self.variable_outputs else None,
                epsilon=self.epsilon,
            )
        else:
            output_scores, means, variances = heinsen_routing(
                scores,
                ops.cast(self.votes(capsules), "float32"),
                beta_use,
                beta_ign,
                self.num_iterations,
                mask=mask,
                output_mask=mask if self.variable_outputs else None,
                epsilon=self.epsilon,
            )
        return [
            ops.cast(output_scores, self.compute_dtype),
            ops.cast(means, self.compute_dtype),
            ops.cast(variances, self.compute_dtype),
        ]

    def _linear_vote_weights(self, capsules):
        """`(kernel (n_out, d_in, d_out), bias)` in float32 such that
        `V[i, j] = mu_inp[i] kernel[j] + bias[j]` (bias per example when
        outputs vary)."""
        kernel = ops.cast(self.kernel, "float32")
        bias = ops.cast(self.bias, "float32")
        if not self.variable_outputs:
            return kernel, bias
        count = ops.shape(capsules)[1]
        kernel = ops.broadcast_to(kernel, (count, *kernel.shape))
        anchors = ops.matmul(
            ops.cast(capsules, "float32"),
            ops.cast(self.anchor_kernel, "float32"),
        )  # (b, j, c, h)
        return kernel, anchors + bias

    def votes(self, capsules):
        """Returns the votes `V[i, j] = mu_inp[i] W + B`, `(batch, n_in,
        n_out, d_cov, d_out)`, in the compute dtype."""
        capsules = ops.cast(capsules, self.compute_dtype)
        kernel = ops.cast(self.kernel, self.compute_dtype)
        bias = ops.cast(self.bias, self.compute_dtype)
        if self.variable_outputs:
            transformed = ops.matmul(capsules, kernel)  # (b, i, c, h)
            anchors = ops.matmul(
                capsules, ops.cast(self.anchor_kernel, self.compute_dtype)
            )  # (b, j, c, h)
            return transformed[:, :, None] + anchors[:, None] + bias
        batch, num_inputs = ops.shape(capsules)[0], ops.shape(capsules)[1]
        d_cov, d_in = capsules.shape[2], capsules.shape[3]
        flat_outputs = self.num_capsules * self.capsule_dim
        if self.num_inputs == "variable":
            # One (b i c, d) @ (d, j h) product.
            kernel = ops.reshape(
                ops.transpose(kernel, (1, 0, 2)), (d_in, flat_outputs)
            )
            votes = ops.matmul(ops.reshape(capsules, (-1, d_in)), kernel)
            votes = ops.reshape(
                votes,
                (batch, num_inputs, d_cov, self.num_capsules, self.capsule_dim),
            )
            return ops.transpose(votes, (0, 1, 3, 2, 4)) + bias
        # One (b c, d) @ (d, j h) product per input capsule i.
        kernel = ops.reshape(
            ops.transpose(kernel, (0, 2, 1, 3)),
            (num_inputs, d_in, flat_outputs),
        )
        votes = ops.matmul(
            ops.reshape(
                ops.transpose(capsules, (1, 0, 2, 3)), (num_inputs, -1, d_in)
            ),
            kernel,
        )
        votes = ops.reshape(
            votes,
            (num_inputs, batch, d_cov, self.num_capsules, self.capsule_dim),
        )
        return ops.transpose(votes, (1, 0, 3, 2, 4)) + bias

    def compute_mask(self, inputs, mask=None):
        mask = combined_input_mask(mask)
        if self.variable_outputs and mask is not None:
            return [mask, mask, mask]
        return None  # A fixed set of output capsules is always present.

    def compute_output_shape(self, input_shape):
        (batch, n_in), (_, _, d_cov, _) = self._split_shapes(input_shape)
        n_out = n_in if self.variable_outputs else self.num_capsules
        capsules_shape = (batch, n_out, d_cov, self.capsule_dim)
        return [(batch, n_out), capsules_shape, capsules_shape]

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "capsule_dim": self.capsule_dim,
            "num_iterations": self.num_iterations,
            "num_inputs": self.num_inputs,
            "tie_betas": self.tie_betas,
            "kernel_initializer": (
                None
                if self.kernel_initializer is None
                else keras.initializers.serialize(self.kernel_initializer)
            ),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer
            ),
            "epsilon": self.epsilon,
        }
