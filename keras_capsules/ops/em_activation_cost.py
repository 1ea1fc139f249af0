"""How EM routing's M-step turns a parent's cost into its activation
(Hinton, Sabour, Frosst 2018, Procedure 1, M-step line 5), and the
changes public implementations made to it."""

import dataclasses
import numbers

from keras_capsules.ops.arguments import positive_number

# Added to every variance sigma^2 by default: identical votes (zero
# variance) keep a finite log-density and cost. Far below the variance of
# routed votes, so results agree with the exact formulas to float32
# precision. The official code uses 5e-4 (`variance_floor`).
VARIANCE_FLOOR = 1e-9


@dataclasses.dataclass(frozen=True)
class ActivationCost:
    """How the M-step weighs the votes and turns a parent's cost into its
    activation logit.

    The defaults are Procedure 1 as written:
    `logit_j = lambda (beta_a - sum_h cost^h)` with
    `cost^h = (beta_u + log sigma^h) sum_i R_ij` and `sigma^2` carrying
    `VARIANCE_FLOOR`. The other values are what public implementations
    changed so that the logit has a useful scale:

    - `activation_bias_gain` `g`: `logit_j = lambda (g beta_a - cost_j)`;
      the official code's `5000` lets an optimiser move the bias at a
      useful rate when `lambda` is small.
    - `cost_scale` `F`: `cost_j` multiplied by `F` (e.g. one over the
      number of children per parent, so that layers of different widths
      give costs of one scale).
    - `cost_per_mass`: `cost_j = sum_h (beta_u + log sigma^h)`, without
      the factor `sum_i R_ij`: a parent's activation then rewards how
      tightly its children agree, not how many it has collected (routing
      that concentrates children cannot by itself turn a parent on).
    - `standardize_costs`: `cost_j` replaced by its z-score across the
      parent types at one position, `(cost_j - mean_k cost_k) / std_k
      cost_k`, so the logits have unit spread whatever the layer.
    - `variance_floor`: added to every `sigma^2`.
    - `assignment_smoothing` `eps`: every M-step weighs the votes by
      `(1 - eps) R_ij + eps R0_ij` instead of `R_ij`, where `R0_ij` is the
      uniform assignment of Procedure 1's line 2. The parent's mean and
      variance are then those of its votes pooled with `eps / (1 - eps)`
      times the weights of the first iteration: its first Gaussian acts
      as a conjugate prior, the usual cure for EM components that
      collapse. A parent keeps every child with at least `eps` of its
      uniform share, so it cannot shrink onto one child (whose vote would
      then have a density that grows as the variance falls to the floor,
      and claim the child completely in the next E-step;
      research/matrix_capsules.md). `0` is Procedure 1.

    Examples:

        >>> ActivationCost()  # Procedure 1 as written
        ActivationCost(activation_bias_gain=1.0, cost_scale=1.0, ...)
        >>> ActivationCost(standardize_costs=True).standardize_costs
        True
    """

    activation_bias_gain: float = 1.0
    cost_scale: float = 1.0
    cost_per_mass: bool = False
    standardize_costs: bool = False
    variance_floor: float = VARIANCE_FLOOR
    assignment_smoothing: float = 0.0

    def check(self, op_name):
        """Returns self; raises a ValueError naming `op_name` for a value
        out of range."""
        for name in ("activation_bias_gain", "cost_scale", "variance_floor"):
            positive_number(op_name, name, getattr(self, name))
        smoothing = self.assignment_smoothing
        if isinstance(smoothing, bool) or not (
            isinstance(smoothing, numbers.Real) and 0 <= smoothing < 1
        ):
            raise ValueError(
                f"`{op_name}` expects `assignment_smoothing` to be a number "
                f"in [0, 1) (0 for Procedure 1). Received: {smoothing!r}."
            )
        return self
