"""Capsules routed by variational Bayes (Ribeiro, Leontidis, Kollias,
AAAI 2020)."""

import keras
from keras import ops

from keras_capsules.layers.capsule_routing import CapsuleRouting, routing_dtype
from keras_capsules.layers.vector_votes import as_poses, flat_votes
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.variational_bayes_routing import (
    variational_bayes_routing,
)


@keras.saving.register_keras_serializable(package="keras_capsules")
class VariationalBayesRouting(CapsuleRouting):
    """Capsules routed by variational Bayes (Ribeiro et al. 2020).

    Each input capsule votes `V[i, j] = P_i W_ij`, and
    `keras_capsules.ops.variational_bayes_routing` fits a Gaussian mixture
    to the votes, weighted by the input activations, with a Dirichlet
    prior over the parents' proportions and Normal-Wishart priors over
    their means and (diagonal) precisions: EM routing's mixture made
    Bayesian, whose priors keep a parent's variance from collapsing. The
    layer speaks the capsule contract: input activations are
    `sigmoid(logits)`, output poses the posterior means `m_j`, and output
    logits `beta_a - (pi_j H[q_j] + beta_u)`, the parent's weighted
    negative posterior entropy. The authors batch-normalise these logits
    (no scale or offset) before the sigmoid, and the poses too; a model
    adds `keras.layers.BatchNormalization` after the layer for that
    (`models.capsule_classifier` does).

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, columns `d_out` of each output pose.
        num_iterations: int, routing iterations. Defaults to `3`.
        **kwargs: `kernel_initializer` (by default a normal of standard
            deviation `1 / sqrt(d_in)`, which keeps votes at the scale of
            the poses), `kernel_regularizer` and base layer arguments
            (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` and `(batch, n_in,
            d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` logits and `(batch, n_out,
        d_cov, d_out)` posterior means.

    Examples:

        >>> layer = VariationalBayesRouting(num_capsules=5, capsule_dim=4)
        >>> logits, poses = layer([np.zeros((2, 32)),
        ...                        np.ones((2, 32, 4, 4))])
        >>> tuple(poses.shape)
        (2, 5, 4, 4)
    """

    def __init__(self, num_capsules, capsule_dim, num_iterations=3, **kwargs):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.num_iterations = positive_int(
            type(self).__name__, "num_iterations", num_iterations
        )

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=d_in**-0.5)

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        self.beta_u = self.add_weight(
            name="beta_u", shape=(self.num_capsules,), initializer="zeros"
        )
        self.beta_a = self.add_weight(
            name="beta_a", shape=(self.num_capsules,), initializer="zeros"
        )

    def _route(self, logits, poses, mask):
        dtype = routing_dtype(self)
        logits, means = variational_bayes_routing(
            flat_votes(self, poses),
            ops.sigmoid(logits),
            ops.cast(self.beta_u, dtype),
            ops.cast(self.beta_a, dtype),
            self.num_iterations,
            mask=mask,
        )
        return logits, as_poses(self, means, poses.shape[-2])

    def get_config(self):
        return {**super().get_config(), "num_iterations": self.num_iterations}
