"""Votes of input capsules for output capsules: one linear map per pair."""

from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.compilation import compiled_by_xla


def capsule_votes(poses, kernel, bias=None, shared=False):
    """Returns the votes `V[i, j] = P[i] W[i, j] + B[i, j]`.

    Every routing family starts from these votes; only the symbols differ:

    ```none
    paper                       pose P[i]   weight W[i, j]   vote V[i, j]
    Sabour et al. 2017, eq. 2   u_i         W_ij (as W^T)    u_hat[j|i]
    Hinton et al. 2018, sec. 2  M_i         W_ij             V_ij
    Heinsen 2019, Algorithm 1   mu_inp[i]   W_ij (and B_ij)  V_ij
    ```

    Poses are `d_cov x d_in` matrices (a vector capsule is a `1 x d_in`
    matrix) and multiply the kernel from the left, so a vote is `d_cov x
    d_out`. With `shared=True` every input capsule uses the same `W[j]`
    (and `B[j]`), so the number of input capsules may vary from call to
    call. The kernel and bias are cast to the poses' dtype.

    Args:
        poses: float `(batch, n_in, d_cov, d_in)`.
        kernel: `(n_in, n_out, d_in, d_out)`, or `(n_out, d_in, d_out)`
            with `shared=True`.
        bias: optional, broadcastable to `(n_in, n_out, d_cov, d_out)`
            (`(n_out, d_cov, d_out)` with `shared=True`).
        shared: bool, one weight per output capsule for all inputs.

    Returns:
        `(batch, n_in, n_out, d_cov, d_out)` votes.

    Examples:

        >>> poses = np.ones((2, 6, 4, 4), "float32")
        >>> kernel = np.ones((6, 3, 4, 4), "float32")
        >>> tuple(capsule_votes(poses, kernel).shape)
        (2, 6, 3, 4, 4)
        >>> tuple(capsule_votes(poses, kernel[0], shared=True).shape)
        (2, 6, 3, 4, 4)
    """
    poses = ops.convert_to_tensor(poses)
    kernel = ops.cast(kernel, poses.dtype)
    if bias is not None:
        bias = ops.cast(bias, poses.dtype)
    # Under XLA the bias joins the product (see `_with_bias_rows`); with
    # TensorFlow's own kernels, its gradient is a fast sum already.
    bias_in_product = bias is not None and compiled_by_xla()
    kernel_rank = 3 if shared else 4
    if (
        len(poses.shape) != 4
        or len(kernel.shape) != kernel_rank
        or poses.shape[-1] != kernel.shape[-2]
        or (not shared and poses.shape[1] not in (None, kernel.shape[0]))
    ):
        expected = (
            "(n_out, d_in, d_out)" if shared else "(n_in, n_out, d_in, d_out)"
        )
        raise ValueError(
            "`capsule_votes` expects poses of shape (batch, n_in, d_cov, "
            f"d_in) and a kernel of shape {expected} (shared={shared}). "
            f"Received: poses {tuple(poses.shape)}, kernel "
            f"{tuple(kernel.shape)}. A kernel without an input axis needs "
            "shared=True."
        )
    batch, num_inputs = ops.shape(poses)[0], ops.shape(poses)[1]
    d_cov, d_in = poses.shape[2], poses.shape[3]
    num_outputs, d_out = kernel.shape[-3], kernel.shape[-1]
    flat_outputs = num_outputs * d_out
    if shared:  # One (b i c, d) @ (d, j h) product.
        kernel = ops.reshape(ops.transpose(kernel, (1, 0, 2)), (d_in, -1))
        rows = ops.reshape(poses, (-1, d_in))
        if bias_in_product:
            bias = ops.broadcast_to(bias, (num_outputs, d_cov, d_out))
            rows, kernel = _with_bias_rows(
                rows,
                kernel,
                ops.reshape(ops.transpose(bias, (1, 0, 2)), (d_cov, -1)),
            )
        votes = dtype_keeping.matmul(rows, kernel)
        if d_cov == 1:
            # The transpose below would move only an axis of size 1: one
            # reshape does it. (tf2onnx turns that transpose into a second
            # reshape whose dimensions it then takes from the wrong tensor.)
            votes = ops.reshape(
                votes, (batch, num_inputs, num_outputs, d_cov, d_out)
            )
        else:
            votes = ops.reshape(
                votes, (batch, num_inputs, d_cov, num_outputs, d_out)
            )
            votes = ops.transpose(votes, (0, 1, 3, 2, 4))
    else:
        # One (b c, d) @ (d, j h) product per input capsule i; an einsum
        # "bicd,ijdh->bijch" picks a slower plan in TensorFlow.
        kernel = ops.reshape(
            ops.transpose(kernel, (0, 2, 1, 3)), (-1, d_in, flat_outputs)
        )
        rows = ops.reshape(
            ops.transpose(poses, (1, 0, 2, 3)), (num_inputs, -1, d_in)
        )
        if bias_in_product:
            bias = ops.broadcast_to(
                bias, (num_inputs, num_outputs, d_cov, d_out)
            )
            rows, kernel = _with_bias_rows(
                rows,
                kernel,
                ops.reshape(
                    ops.transpose(bias, (0, 2, 1, 3)),
                    (num_inputs, d_cov, flat_outputs),
                ),
            )
        votes = dtype_keeping.matmul(rows, kernel)
        votes = ops.reshape(
            votes, (num_inputs, batch, d_cov, num_outputs, d_out)
        )
        votes = ops.transpose(votes, (1, 0, 3, 2, 4))
    if bias is not None and not bias_in_product:
        votes = votes + bias
    return votes


def _with_bias_rows(rows, kernel, bias):
    """`(rows', kernel')` with `rows' @ kernel' = rows @ kernel + B[r]`,
    where `B[r]` is the bias of row `r`'s place in its pose.

    `rows` `(..., n d_cov, d_in)` are the pose rows, `kernel` `(..., d_in,
    j h)` and `bias` `(..., d_cov, j h)`. Each row gains the indicator of
    its place in its pose and the kernel gains the bias rows, so the
    bias's gradient, a sum of the votes' gradient over the batch, comes
    out of the product that forms the kernel's gradient. As a separate
    sum, XLA on CPU fused the whole votes' gradient into it and
    recomputed it there (1.0 ms of Heinsen 64 -> 5's 3.2-4.4 ms step at
    batch 20; 2.2-2.4 ms with the bias in the product). The
    product's contraction grows from `d_in` to `d_in + d_cov`.
    """
    d_cov = bias.shape[-2]
    leading = ops.shape(rows)[:-2]
    places = ops.broadcast_to(
        ops.eye(d_cov, dtype=rows.dtype),
        (*leading, ops.shape(rows)[-2] // d_cov, d_cov, d_cov),
    )
    rows = ops.concatenate(
        [rows, ops.reshape(places, (*leading, -1, d_cov))], axis=-1
    )
    return rows, ops.concatenate([kernel, bias], axis=-2)


def conv_capsule_votes(patches, kernel):
    """Returns the votes of every child in each parent's receptive field,
    parent types first: `V[b, y, x, c, ky, kx, t] = P[b, y, x, ky, kx, t]
    W[ky, kx, t, c]` (Hinton et al. 2018, sec. 4; `P` from
    `capsule_patches.extract_patches` of the child poses).

    One `(b y x d_cov, d_in) @ (d_in, c d_out)` product per receptive-field
    slot `(ky, kx, t)`, then one transpose to the parent-major layout that
    `conv_em_routing_by_parent` routes in. (TensorFlow's einsum of the
    same product transposes both operands and the result, and then the
    router transposes the votes again.)

    Args:
        patches: `(batch, H', W', K, K, B, d_cov, d_in)` child poses.
        kernel: `(K, K, B, C, d_in, d_out)`, cast to the patches' dtype.

    Returns:
        `(batch, H', W', C, K, K, B, d_cov, d_out)` votes.

    Examples:

        >>> patches = np.ones((2, 3, 3, 3, 3, 8, 4, 4), "float32")
        >>> kernel = np.ones((3, 3, 8, 5, 4, 4), "float32")
        >>> tuple(conv_capsule_votes(patches, kernel).shape)
        (2, 3, 3, 5, 3, 3, 8, 4, 4)
    """
    patches, kernel = _conv_arguments("conv_capsule_votes", patches, kernel)
    batch = ops.shape(patches)[0]
    rows, columns, size, _, child_types, d_cov, d_in = patches.shape[1:]
    types, d_out = kernel.shape[3], kernel.shape[5]
    slots = size * size * child_types
    by_slot = ops.reshape(
        ops.transpose(
            ops.reshape(patches, (-1, slots, d_cov, d_in)), (1, 0, 2, 3)
        ),
        (slots, -1, d_in),
    )
    # (K K B, b H' W', d_cov, C, d_out) -> (b H' W', C, K K B, d_cov, d_out):
    # five axes, so that LiteRT's builtin transpose (at most 6) takes it.
    votes = ops.transpose(
        ops.reshape(
            dtype_keeping.matmul(by_slot, _kernel_by_slot(kernel)),
            (slots, -1, d_cov, types, d_out),
        ),
        (1, 3, 0, 2, 4),
    )
    return ops.reshape(
        votes,
        (batch, rows, columns, types, size, size, child_types, d_cov, d_out),
    )


def conv_capsule_vote_means(patches, kernel, weights):
    """Each parent's weighted mean vote `sum_i w_i V_ij / sum_i w_i` over
    its receptive field, formed from the patches and the kernel without
    forming the votes: the votes are linear in the poses, so the mean is
    `sum_i (w_i P_i) W_ij / sum_i w_i`, one `(b y x d_cov, K K B d_in) @
    (K K B d_in, C d_out)` product. A parent whose weights are all 0 gets
    mean 0.

    Args:
        patches: `(batch, H', W', K, K, B, d_cov, d_in)`, as for
            `conv_capsule_votes`.
        kernel: `(K, K, B, C, d_in, d_out)`.
        weights: `(batch, H', W', K, K, B)`, `w_i >= 0` of each child in
            each receptive field.

    Returns:
        `(batch, H', W', C, d_cov, d_out)` means.

    Examples:

        >>> patches = np.ones((2, 3, 3, 3, 3, 8, 4, 4), "float32")
        >>> kernel = np.ones((3, 3, 8, 5, 4, 4), "float32")
        >>> weights = np.ones((2, 3, 3, 3, 3, 8), "float32")
        >>> tuple(conv_capsule_vote_means(patches, kernel, weights).shape)
        (2, 3, 3, 5, 4, 4)
    """
    patches, kernel = _conv_arguments(
        "conv_capsule_vote_means", patches, kernel
    )
    weights = ops.cast(weights, patches.dtype)
    if tuple(weights.shape[1:]) != tuple(patches.shape[1:6]):
        raise ValueError(
            "`conv_capsule_vote_means` expects weights of shape (batch, H', "
            f"W', K, K, B) = (batch, *{tuple(patches.shape[1:6])}) as in the "
            f"patches. Received shape {tuple(weights.shape)}."
        )
    batch = ops.shape(patches)[0]
    rows, columns, size, _, child_types, d_cov, d_in = patches.shape[1:]
    types, d_out = kernel.shape[3], kernel.shape[5]
    slots = size * size * child_types
    # Four axes (b H' W', K K B, d_cov, d_in): LiteRT's builtin slices and
    # broadcasts take at most 5.
    weighted = ops.reshape(patches, (-1, slots, d_cov, d_in)) * ops.reshape(
        weights, (-1, slots, 1, 1)
    )
    weighted = ops.reshape(
        ops.transpose(weighted, (0, 2, 1, 3)), (-1, slots * d_in)
    )
    kernel = ops.reshape(_kernel_by_slot(kernel), (slots * d_in, types * d_out))
    sums = ops.transpose(
        ops.reshape(
            dtype_keeping.matmul(weighted, kernel),
            (batch, rows, columns, d_cov, types, d_out),
        ),
        (0, 1, 2, 4, 3, 5),
    )
    total = ops.sum(weights, axis=(3, 4, 5))
    total = ops.where(total > 0, total, ops.ones_like(total))
    return sums / total[..., None, None, None]


def _kernel_by_slot(kernel):
    """The kernel `(K, K, B, C, d_in, d_out)` as one `(d_in, C d_out)`
    matrix per receptive-field slot: `(K K B, d_in, C d_out)`."""
    size, _, child_types, types, d_in, d_out = kernel.shape
    return ops.reshape(
        ops.transpose(
            ops.reshape(
                kernel, (size * size * child_types, types, d_in, d_out)
            ),
            (0, 2, 1, 3),
        ),
        (size * size * child_types, d_in, types * d_out),
    )


def _conv_arguments(op_name, patches, kernel):
    """The patches as a tensor and the kernel in their dtype; a
    ValueError for shapes that do not fit."""
    patches = ops.convert_to_tensor(patches)
    kernel = ops.cast(kernel, patches.dtype)
    if (
        len(patches.shape) != 8
        or len(kernel.shape) != 6
        or tuple(patches.shape[3:6]) != tuple(kernel.shape[:3])
        or patches.shape[-1] != kernel.shape[-2]
    ):
        raise ValueError(
            f"`{op_name}` expects patches of shape (batch, H', W', K, K, B, "
            "d_cov, d_in) and a kernel of shape (K, K, B, C, d_in, d_out). "
            f"Received: patches {tuple(patches.shape)}, kernel "
            f"{tuple(kernel.shape)}."
        )
    return patches, kernel
