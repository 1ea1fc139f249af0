"""Capsules routed with E-, D- and M-steps (Heinsen 2019, sec. 3)."""

import keras
from keras import ops

from keras_capsules.layers.capsule_routing import (
    SHARE_WEIGHTS_HINT,
    CapsuleRouting,
    routing_dtype,
)
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.heinsen_routing import heinsen_routing
from keras_capsules.ops.heinsen_routing_linear import heinsen_routing_linear
from keras_capsules.ops.heinsen_steps import DEFAULT_EPSILON, check_epsilon


@keras.saving.register_keras_serializable(package="keras_capsules")
class HeinsenRouting(CapsuleRouting):
    """Routes scored capsules to scored capsules (Heinsen, 2019).

    Each input capsule `mu_inp[i]` (a `d_cov x d_in` matrix) votes
    `V[i, j] = mu_inp[i] W + B` for each output capsule j, and
    `keras_capsules.ops.heinsen_routing` (Algorithm 1) turns the votes and
    the input scores into output scores and capsules (the means of the
    outputs' Gaussian models). The layer speaks the capsule contract (see
    `CapsuleRouting`): the input scores are logits, the paper's `a_inp`.
    Three modes, by how many capsules are known when the layer is built:

    - weights per input and output pair (the default): `W[i, j]` `(d_in,
      d_out)`, `B[i, j]` `(d_cov, d_out)`, betas `(n_in, n_out)`;
    - shared weights (`share_weights=True`): weights per output only
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
        share_weights: bool, one `W[j]`, `B[j]` and beta pair per output
            capsule for all input capsules. Defaults to `False`; always
            shared when `num_capsules` is None.
        tie_betas: bool, `beta_ign = beta_use`. Defaults to `False`.
        epsilon: positive float added to the use totals and the variances
            (see `ops.heinsen_routing`). Defaults to 1e-5, the author's
            code's value.
        **kwargs: `kernel_initializer` (of `W` and `A`; by default a
            normal of standard deviation `1 / d_in`), `kernel_regularizer`
            (optional, of `W` and `A`) and base layer arguments (`name`,
            `dtype`, `trainable`).

    Call arguments:
        inputs: `[scores, capsules]`: `(batch, n_in)` input scores
            (logits; the paper's `a_inp`) and `(batch, n_in, d_cov, d_in)`
            input capsules.
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part; a masked input acts as a score of minus infinity.

    Returns:
        `[scores, capsules]`: `(batch, n_out)` output logits and `(batch,
        n_out, d_cov, d_out)` means of the outputs' Gaussian models (their
        variances: `ops.heinsen_routing` on `votes`).

    Examples:

        >>> layer = HeinsenRouting(num_capsules=5, capsule_dim=4)
        >>> scores, capsules = layer(
        ...     [np.zeros((2, 64)), np.ones((2, 64, 4, 4))])
        >>> tuple(capsules.shape)
        (2, 5, 4, 4)
    """

    _SHARED_WEIGHTS_HINT = SHARE_WEIGHTS_HINT

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        share_weights=False,
        tie_betas=False,
        epsilon=DEFAULT_EPSILON,
        **kwargs,
    ):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.num_iterations = positive_int(
            type(self).__name__, "num_iterations", num_iterations
        )
        check_epsilon(self.name, epsilon)
        self.epsilon = float(epsilon)
        self.share_weights = bool(share_weights) or num_capsules is None
        self.tie_betas = bool(tie_betas)

    def _allows_variable_outputs(self):
        return True

    @property
    def variable_outputs(self):
        """Whether there is one output capsule per input capsule."""
        return self.num_capsules is None

    @property
    def shares_input_weights(self):
        """Whether all input capsules use the same weights."""
        return self.share_weights

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=1.0 / d_in)

    def _kernel_shape(self, num_inputs, d_in):
        if self.variable_outputs:  # One W for every (i, j).
            return (d_in, self.capsule_dim)
        return super()._kernel_shape(num_inputs, d_in)

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        pair_shape = self._kernel_shape(num_inputs, d_in)[:-2]
        beta_shape = pair_shape or (1,)  # W_ij, B_ij, beta_ij (or per j).
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

    def _route(self, scores, capsules, mask):
        beta_use = ops.cast(self.beta_use, routing_dtype(self))
        beta_ign = (
            beta_use
            if self.tie_betas
            else ops.cast(self.beta_ign, routing_dtype(self))
        )
        # Route in float32 (float64 under a float64 policy): half-precision
        # Gaussian log-densities overflow.
        arguments = {
            "num_iterations": self.num_iterations,
            "mask": mask,
            "output_mask": mask if self.variable_outputs else None,
            "epsilon": self.epsilon,
        }
        d_in = capsules.shape[-1]
        if self.shares_input_weights and d_in * d_in <= 4 * self.capsule_dim:
            # Votes are one linear map of the inputs: route from moments
            # of the inputs, never forming the votes. The moments cost
            # d_in^2 per (input, output) pair against d_out for the votes,
            # so wide inputs (SST's 1x64 -> 1x2) route the votes instead.
            kernel, bias = self._linear_vote_weights(capsules)
            return heinsen_routing_linear(
                scores,
                ops.cast(capsules, routing_dtype(self)),
                kernel,
                bias,
                beta_use,
                beta_ign,
                **arguments,
            )
        return heinsen_routing(
            scores,
            ops.cast(self.votes(capsules), routing_dtype(self)),
            beta_use,
            beta_ign,
            **arguments,
        )

    def _linear_vote_weights(self, capsules):
        """`(kernel (n_out, d_in, d_out), bias)` in the routing dtype such that
        `V[i, j] = mu_inp[i] kernel[j] + bias[j]` (bias per example when
        outputs vary)."""
        kernel = ops.cast(self.kernel, routing_dtype(self))
        bias = ops.cast(self.bias, routing_dtype(self))
        if not self.variable_outputs:
            return kernel, bias
        count = ops.shape(capsules)[1]
        kernel = ops.broadcast_to(kernel, (count, *kernel.shape))
        anchors = dtype_keeping.matmul(
            ops.cast(capsules, routing_dtype(self)),
            ops.cast(self.anchor_kernel, routing_dtype(self)),
        )  # (b, j, c, h)
        return kernel, anchors + bias

    def votes(self, capsules):
        """Returns the votes `V[i, j] = mu_inp[i] W + B`, `(batch, n_in,
        n_out, d_cov, d_out)`, in the compute dtype."""
        capsules = ops.cast(capsules, self.compute_dtype)
        if not self.variable_outputs:
            return self.capsule_votes(capsules, self.bias)
        kernel = ops.cast(self.kernel, self.compute_dtype)
        transformed = dtype_keeping.matmul(capsules, kernel)  # (b, i, c, h)
        anchors = dtype_keeping.matmul(
            capsules, ops.cast(self.anchor_kernel, self.compute_dtype)
        )  # (b, j, c, h)
        bias = ops.cast(self.bias, self.compute_dtype)
        return transformed[:, :, None] + anchors[:, None] + bias

    def compute_mask(self, inputs, mask=None):
        mask = combined_input_mask(mask)
        if self.variable_outputs and mask is not None:
            mask = ops.reshape(mask, (ops.shape(mask)[0], -1))  # A grid's.
            return [mask, mask]
        return None  # A fixed set of output capsules is always present.

    def get_config(self):
        return {
            **super().get_config(),
            "num_iterations": self.num_iterations,
            "share_weights": self.share_weights,
            "tie_betas": self.tie_betas,
            "epsilon": self.epsilon,
        }
