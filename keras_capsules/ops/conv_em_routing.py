"""Convolutional EM routing (Hinton, Sabour, Frosst 2018, sec. 4): each
child is assigned over every parent whose receptive field holds it."""

from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.arguments import positive_int, routing_tensor
from keras_capsules.ops.capsule_patches import (
    extract_patches,
    fold_patches,
    output_size,
)
from keras_capsules.ops.compilation import written_once
from keras_capsules.ops.em_activation_cost import ActivationCost
from keras_capsules.ops.em_routing_inputs import routing_inputs
from keras_capsules.ops.em_steps import em_routing_on_patches

# The votes' layouts: `conv_em_routing`'s and `conv_em_routing_by_parent`'s.
_CHILD_MAJOR = "(batch, H', W', K, K, B, C, h)"
_PARENT_MAJOR = "(batch, H', W', C, K, K, B, h)"


def _check(op_name, votes, activations, strides, layout):
    kernel_axis = 3 if layout == _CHILD_MAJOR else 4
    child_types = (
        votes.shape[kernel_axis + 2] if len(votes.shape) == 8 else None
    )
    if (
        len(votes.shape) != 8
        or votes.shape[kernel_axis] != votes.shape[kernel_axis + 1]
    ):
        raise ValueError(
            f"`{op_name}` expects votes of shape {layout}. Received shape "
            f"{tuple(votes.shape)}."
        )
    if len(activations.shape) != 4 or activations.shape[3] != child_types:
        raise ValueError(
            f"`{op_name}` expects child activations of shape (batch, H, "
            f"W, B) with B = {child_types} as in the votes. Received shape "
            f"{tuple(activations.shape)}."
        )
    strides = positive_int(op_name, "strides", strides)
    kernel_size = votes.shape[kernel_axis]
    expected = tuple(
        output_size(size, kernel_size, strides)
        for size in activations.shape[1:3]
    )
    if tuple(votes.shape[1:3]) != expected:
        raise ValueError(
            f"`{op_name}`: a {tuple(activations.shape[1:3])} child grid "
            f"with kernel {kernel_size} and strides {strides} has "
            f"{expected} parent positions, but the votes have "
            f"{tuple(votes.shape[1:3])}."
        )


def conv_em_routing(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    strides=1,
    mask=None,
    cost=None,
):
    """EM routing between convolutional capsule layers.

    ```none
    paper        code                  shape
    V_ij^h       votes                 (batch, H', W', K, K, B, C, h)
    a_i          activations           (batch, H, W, B), the child grid
    beta_u, _a   beta_u, beta_a        (C,)
    lambda       inverse_temperatures  (iterations,)
    ```

    `votes[b, y, x, ky, kx, t, c]` is the vote of the child of type `t` at
    `(s y + ky, s x + kx)` for the parent of type `c` at `(y, x)`. The
    M-step of each parent runs over its `K x K x B` receptive field, as in
    `em_routing`. In the E-step a child's assignments are normalised over
    every parent that holds it in its receptive field, of every type and
    at every position (up to `K x K x C` of them; fewer at the border):
    `R_ij = a_j p_ij / sum_{k holds i} a_k p_ik`. The first assignment is
    uniform over those parents. The normaliser is reduced onto the child
    grid and gathered back, so nothing larger than the votes is formed.

    Args:
        votes: float `(batch, H', W', K, K, B, C, h)`, `H' = (H - K) // s + 1`.
        activations: float `(batch, H, W, B)` child activations in `[0, 1]`.
        beta_u: float `(C,)`.
        beta_a: float `(C,)`.
        inverse_temperatures: floats, one `lambda` per iteration.
        strides: int `s`. Defaults to `1`.
        mask: optional bool `(batch, H, W, B)`, True for children that take
            part.
        cost: optional `ActivationCost`, as for `em_routing` (costs are
            standardised across the `C` parent types at each position;
            assignment smoothing keeps a share of the child's first,
            uniform assignment over its parents). None for Procedure 1.

    Returns:
        `(activations, means, variances)`: `(batch, H', W', C)` activations
        in `[0, 1]` and `(batch, H', W', C, h)` means and variances.

    Examples:

        >>> rng = np.random.default_rng(0)
        >>> votes = rng.normal(size=(2, 3, 3, 3, 3, 4, 5, 16))
        >>> activations, means, variances = conv_em_routing(
        ...     votes, np.ones((2, 5, 5, 4)), np.zeros(5), np.zeros(5),
        ...     [1.0, 2.0])
        >>> tuple(activations.shape), tuple(means.shape)
        ((2, 3, 3, 5), (2, 3, 3, 5, 16))
    """
    votes, output_dtype = routing_tensor("conv_em_routing", "votes", votes)
    activations = ops.convert_to_tensor(activations)
    _check("conv_em_routing", votes, activations, strides, _CHILD_MAJOR)
    return _route_by_parent(
        "conv_em_routing",
        ops.transpose(votes, (0, 1, 2, 6, 3, 4, 5, 7)),
        output_dtype,
        activations,
        beta_u,
        beta_a,
        inverse_temperatures,
        strides,
        mask,
        cost or ActivationCost(),
    )


def conv_em_routing_by_parent(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    strides=1,
    mask=None,
    cost=None,
    vote_offset=None,
    return_logits=False,
):
    """`conv_em_routing` of votes laid out with the parent types before
    the receptive field, `(batch, H', W', C, K, K, B, h)`, the layout it
    routes in (`capsule_votes.conv_capsule_votes` makes them so): no
    transpose of the votes. The arguments and results are otherwise
    `conv_em_routing`'s, and two more:

    `return_logits`: bool, return the activations' logits instead of the
    activations (as `em_routing`'s). Defaults to `False`.

    `vote_offset`: optional float `(batch, H', W', C, h)`, each parent's
    activation-weighted mean vote `sum_i a_i V_ij / sum_i a_i` over its
    receptive field (masked children's `a_i` taken as 0; 0 where all are
    0), which the routing subtracts from the votes so that float32 keeps
    their spread. By default it is formed from the votes, one more pass
    over them; `capsule_votes.conv_capsule_vote_means` forms it from the
    patches and the kernel instead. The results do not depend on it
    beyond rounding.

    Examples:

        >>> rng = np.random.default_rng(0)
        >>> votes = rng.normal(size=(2, 3, 3, 5, 3, 3, 4, 16))
        >>> logits, means, variances = conv_em_routing_by_parent(
        ...     votes, np.ones((2, 5, 5, 4)), np.zeros(5), np.zeros(5),
        ...     [1.0, 2.0], return_logits=True)
        >>> tuple(logits.shape), tuple(variances.shape)
        ((2, 3, 3, 5), (2, 3, 3, 5, 16))
    """
    votes, output_dtype = routing_tensor(
        "conv_em_routing_by_parent", "votes", votes
    )
    activations = ops.convert_to_tensor(activations)
    _check(
        "conv_em_routing_by_parent", votes, activations, strides, _PARENT_MAJOR
    )
    if vote_offset is not None:
        vote_offset = ops.cast(vote_offset, votes.dtype)
        expected = (*votes.shape[1:4], votes.shape[7])
        if tuple(vote_offset.shape[1:]) != expected:
            raise ValueError(
                "`conv_em_routing_by_parent` expects `vote_offset` of shape "
                f"(batch, H', W', C, h) with (H', W', C, h) = {expected} as "
                "in the votes. Received shape "
                f"{tuple(vote_offset.shape)}."
            )
    return _route_by_parent(
        "conv_em_routing_by_parent",
        votes,
        output_dtype,
        activations,
        beta_u,
        beta_a,
        inverse_temperatures,
        strides,
        mask,
        cost or ActivationCost(),
        vote_offset,
        return_logits,
    )


def _route_by_parent(
    op_name,
    votes,
    output_dtype,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    strides,
    mask,
    options,
    vote_offset=None,
    return_logits=False,
):
    """The routing of parent-major votes `(batch, H', W', C, K, K, B, h)`."""
    rows, columns, types, kernel_size, _, child_types, dim = votes.shape[1:]
    activations, beta_u, beta_a, inverse_temperatures = routing_inputs(
        op_name,
        votes.dtype,
        activations,
        (votes.shape[0], *activations.shape[1:]),
        mask,
        (beta_u, beta_a, types),
        inverse_temperatures,
        options,
    )
    batch = ops.shape(votes)[0]
    grid_size = activations.shape[1:3]
    # Any number of examples: the first assignment is formed for one.
    patch_shape = (-1, rows, columns, kernel_size, kernel_size, child_types)
    slots = kernel_size * kernel_size * child_types

    def over_receptive_fields(logits):
        # log sum over the parent types, in each patch slot ...
        # Written once under XLA: otherwise the gradient of the folds and
        # gathers below, small grid-sized work, is recomputed for every
        # parent type inside the fusion that forms the logits' gradient.
        per_slot = written_once(
            ops.reshape(ops.logsumexp(logits, axis=2), patch_shape)
        )
        # ... then over every slot that holds the same child, shifted by
        # the child's largest value for stability.
        shift = ops.stop_gradient(
            fold_patches(per_slot, grid_size, strides, "max")
        )
        shift_slots = extract_patches(shift, kernel_size, strides)
        total = fold_patches(
            ops.exp(per_slot - shift_slots), grid_size, strides, "sum"
        )
        # total >= 1 at every child in a receptive field (its largest
        # term is exp(0)); the floor only keeps log finite elsewhere.
        log_total = (
            extract_patches(
                ops.log(dtype_keeping.maximum(total, 1.0)), kernel_size, strides
            )
            + shift_slots
        )
        return ops.reshape(log_total, (-1, rows * columns, 1, slots))

    logits, means, variances = em_routing_on_patches(
        # Parent types before children: every routing sum over children is
        # then a batched product over contiguous axes.
        ops.reshape(votes, (batch, rows * columns, types, slots, dim)),
        ops.reshape(
            extract_patches(activations, kernel_size, strides),
            (batch, rows * columns, slots),
        ),
        beta_u,
        beta_a,
        inverse_temperatures,
        over_receptive_fields,
        options,
        offset=None
        if vote_offset is None
        else ops.reshape(vote_offset, (batch, rows * columns, types, dim)),
    )
    grid = (batch, rows, columns, types)
    return tuple(
        ops.cast(tensor, output_dtype)
        for tensor in (
            ops.reshape(logits if return_logits else ops.sigmoid(logits), grid),
            ops.reshape(means, (*grid, dim)),
            ops.reshape(variances, (*grid, dim)),
        )
    )
