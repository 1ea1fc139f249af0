"""The steps of Heinsen routing (Heinsen 2019, Algorithm 1) that its two
forms share (`heinsen_routing` and `heinsen_routing_linear`): presences,
the E-step's responsibilities, the D-step's shares and the output
scores."""

import math
import numbers

from keras import ops

from keras_capsules.ops import dtype_keeping

# Added to the use-weighted totals before dividing by them, and to the
# output variances: keeps identical votes (zero variance) and all-masked
# inputs finite. The author's code (glassroom/heinsen_routing, `eps`)
# uses 1e-5 for both; the paper's text names none.
DEFAULT_EPSILON = 1e-5
# Stands in for the log-probability of a masked output capsule in the
# E-step's softmax; finite, so that a sample with no output left stays
# free of NaN.
_MASKED_LOGIT = -1e9


def check_epsilon(name, epsilon):
    """Raises unless `epsilon` is a positive finite number."""
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, numbers.Real)
        or not 0.0 < float(epsilon) < math.inf
    ):
        raise ValueError(
            f"`{name}` expects `epsilon` to be a positive float (the "
            f"author's code uses 1e-5). Received: epsilon={epsilon!r}."
        )


def input_presence(scores, mask, dtype):
    """`f(a_inp)` as `(batch, n_in, 1)`, 0 where `mask` is False."""
    presence = ops.sigmoid(ops.cast(scores, dtype))
    if mask is not None:
        presence = presence * ops.cast(mask, dtype)
    # expand_dims, not a new-axis slice, in every op here: LiteRT's
    # builtin ops take no new-axis slice of a tensor of unknown size.
    return ops.expand_dims(presence, 2)


def output_presence(output_mask, batch, num_outputs, dtype):
    """`(batch, 1, n_out)`: 1 for outputs that take part, else 0."""
    if output_mask is None:
        return ops.ones((batch, 1, num_outputs), dtype)
    return ops.expand_dims(ops.cast(output_mask, dtype), 1)


def first_responsibility(present, num_inputs):
    """Line 5, `R = 1 / n_out`, over the outputs that take part."""
    uniform = present / dtype_keeping.maximum(
        ops.sum(present, axis=-1, keepdims=True), 1.0
    )
    batch, _, num_outputs = ops.shape(present)
    return ops.broadcast_to(uniform, (batch, num_inputs, num_outputs))


def responsibility(output_scores, log_likelihood, present, masked):
    """Line 8 in the log domain: `softmax_j(log f(a_out) + log P)`; masked
    outputs (where `present` is 0, if `masked`) get no share."""
    logits = ops.expand_dims(ops.log_sigmoid(output_scores), 1) + log_likelihood
    if masked:
        logits = ops.where(present > 0, logits, _MASKED_LOGIT)
    return ops.softmax(logits, axis=-1) * present


def shares_and_scores(presence, routing, beta_use, beta_ign):
    """D-step (lines 12-13) and the output scores (line 16): returns
    `(D_use (batch, n_in, n_out), a_out (batch, n_out))`."""
    use = presence * routing  # (b, i, j)
    ignore = presence - use
    return use, ops.sum(beta_use * use - beta_ign * ignore, axis=1)
