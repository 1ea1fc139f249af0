"""How the EM routing layers route: the iterations with their inverse
temperatures, and how a parent's cost becomes its activation. One frozen
object, with the library's named presets."""

import dataclasses

from keras_capsules.ops.em_activation_cost import (
    VARIANCE_FLOOR,
    ActivationCost,
)
from keras_capsules.ops.settings import Settings

# The paper fixes no final inverse temperature. Its cost
# sum_h (beta_u + log sigma^h) sum_i R_ij grows with the number of
# children: in the small model's class capsules it is about -440 at
# initialisation, so lambda = 0.01 already gives every class a_j = 0.99
# and MNIST accuracy was 13% after 300 steps; 0.001 starts near a_j = 0.64
# and reached 81.6% after one epoch (measured, small model, batch 32).
DEFAULT_FINAL_INVERSE_TEMPERATURE = 0.001
# The official code's schedule over iterations: lambda_t = final (1 -
# GEOMETRIC_RATIO^(t + 1)).
GEOMETRIC_RATIO = 0.95
SCHEDULES = ("linear", "geometric")
COST_NORMALIZATIONS = (
    "none",
    "per_child",
    "per_mass",
    "standardize",
    "per_mass_standardize",
)


@dataclasses.dataclass(frozen=True)
class EMRouting(Settings):
    """How an EM routing layer routes (Hinton, Sabour, Frosst 2018,
    Procedure 1). The defaults are Procedure 1 as written; `PRESETS`
    holds the library's named settings (`EMRouting.preset(name)`).

    The number of iterations has one source, `num_iterations`: the
    inverse temperatures `lambda_t` are a schedule over them, rising to
    `final_inverse_temperature` (`inverse_temperatures` gives the values).

    Args:
        num_iterations: int >= 1, routing iterations. Defaults to `3`.
        final_inverse_temperature: float > 0, `lambda` of the last
            iteration. Defaults to `0.001`.
        schedule: `"linear"`, `lambda_t = final (t + 1) / T`, or
            `"geometric"`, the official code's `final (1 - 0.95^(t + 1))`.
            Defaults to `"linear"`.
        activation_bias_gain: float `g > 0`: the activation logit is
            `lambda (g beta_a - cost)`. Defaults to `1.0`; the official
            code's `5000` lets the bias learn when `lambda` is small.
        cost_normalization: `"none"` (Procedure 1), `"per_child"` (the cost
            divided by the number of children per parent, so layers of
            different widths give costs of one scale), `"per_mass"` (the
            cost without its factor `sum_i R_ij`), `"standardize"` (the
            costs' z-scores across the parent types at a position:
            activations spread whatever the layer; needs 3 or more parent
            types) or `"per_mass_standardize"` (both). Defaults to
            `"none"`.
        variance_floor: float > 0 added to every variance. Defaults to
            `ops.ActivationCost().variance_floor` (1e-9); the official code uses
            5e-4.
        assignment_smoothing: float `eps` in `[0, 1)`: every M-step after
            the first weighs a child by `(1 - eps) R_ij + eps R0_ij`, `R0`
            its first, uniform assignment, so that no parent collapses
            onto a single child. Defaults to `0.0`.

    Examples:

        >>> settings = EMRouting(num_iterations=2,
        ...                      final_inverse_temperature=1.0)
        >>> settings.inverse_temperatures
        (0.5, 1.0)
        >>> EMRouting.preset("standardized").num_iterations
        2
    """

    KIND = "EM routing"

    num_iterations: int = 3
    final_inverse_temperature: float = DEFAULT_FINAL_INVERSE_TEMPERATURE
    schedule: str = "linear"
    activation_bias_gain: float = 1.0
    cost_normalization: str = "none"
    variance_floor: float = VARIANCE_FLOOR
    assignment_smoothing: float = 0.0

    def __post_init__(self):
        self._check_positive_ints("num_iterations")
        self._check_options(
            schedule=SCHEDULES, cost_normalization=COST_NORMALIZATIONS
        )
        self._check_positive("final_inverse_temperature")
        self.cost(1).check("EMRouting")

    @property
    def inverse_temperatures(self):
        """`lambda_t` of each iteration, a tuple of `num_iterations`."""
        count, final = self.num_iterations, self.final_inverse_temperature
        if self.schedule == "linear":
            return tuple(final * (t + 1) / count for t in range(count))
        return tuple(
            final * (1.0 - GEOMETRIC_RATIO ** (t + 1)) for t in range(count)
        )

    @property
    def standardizes_costs(self):
        """Whether costs are standardised across the parent types."""
        return self.cost_normalization.endswith("standardize")

    def cost(self, children_per_parent):
        """`ops.ActivationCost` of these settings for parents of
        `children_per_parent` children each."""
        per_child = self.cost_normalization == "per_child"
        return ActivationCost(
            activation_bias_gain=float(self.activation_bias_gain),
            cost_scale=1.0 / children_per_parent if per_child else 1.0,
            cost_per_mass=self.cost_normalization.startswith("per_mass"),
            standardize_costs=self.standardizes_costs,
            variance_floor=float(self.variance_floor),
            assignment_smoothing=float(self.assignment_smoothing),
        )

    @classmethod
    def from_former_arguments(cls, inverse_temperatures=None, **fields):
        """The settings of the separate arguments that EM layers took
        before this object (their `num_iterations` with an optional list
        of inverse temperatures); the list's values, when they follow no
        schedule, come back from the layer's weight, not from here."""
        if inverse_temperatures is None:
            return cls(**fields)
        values = tuple(float(v) for v in inverse_temperatures)
        fields["num_iterations"] = len(values)
        for schedule in SCHEDULES:
            settings = cls(
                final_inverse_temperature=values[-1],
                schedule=schedule,
                **fields,
            )
            if schedule == "geometric":
                # To 12 digits: the division leaves rounding behind.
                final = values[-1] / (1.0 - GEOMETRIC_RATIO ** len(values))
                settings = settings.replace(
                    final_inverse_temperature=float(f"{final:.12g}")
                )
            if all(
                abs(a - b) <= 1e-9 * abs(b)
                for a, b in zip(settings.inverse_temperatures, values)
            ):
                return settings
        return cls(final_inverse_temperature=values[-1], **fields)


PRESETS = {
    # The paper's Procedure 1 as written, lambda rising linearly to 0.001.
    "paper": EMRouting(),
    # Costs standardised across parent types (logits of unit spread in
    # every layer, so the bias learns and some capsules start off), lambda
    # rising linearly to 1, the official code's variance floor 5e-4, which
    # keeps tiny initial poses from committing every child, assignments
    # smoothed towards uniform so that no parent collapses onto one child
    # (with it 3 iterations learn as fast as 2), and 2 iterations (as
    # accurate as 3 and faster). The ablations behind it:
    # research/matrix_capsule_ablations.md.
    "standardized": EMRouting(
        num_iterations=2,
        final_inverse_temperature=1.0,
        cost_normalization="standardize",
        variance_floor=5e-4,
        assignment_smoothing=0.8,
    ),
}
EMRouting.PRESETS = PRESETS
