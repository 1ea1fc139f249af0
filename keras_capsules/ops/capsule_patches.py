"""Receptive fields of convolutional capsules: gather a child grid into
parent patches, and fold patch values back onto the child grid."""

from keras import ops

from keras_capsules.ops import dtype_keeping

# Fills the child positions that a kernel offset does not reach when
# folding with `reduction="max"`; finite, so it never makes a NaN.
_LOWEST = -1e30


def output_size(size, kernel_size, strides):
    """Parent positions along one axis of a 'valid' convolution."""
    return (size - kernel_size) // strides + 1


def extract_patches(grid, kernel_size, strides):
    """Gathers the receptive field of every parent position.

    Args:
        grid: `(batch, H, W, ...)` child values (any trailing axes).
        kernel_size: int `K`.
        strides: int `s`.

    Returns:
        `(batch, H', W', K, K, ...)`: entry `[b, y, x, ky, kx]` is
        `grid[b, s y + ky, s x + kx]`, with `H' = (H - K) // s + 1`.
    """
    height, width = grid.shape[1], grid.shape[2]
    rows = output_size(height, kernel_size, strides)
    columns = output_size(width, kernel_size, strides)
    offsets = []
    for ky in range(kernel_size):
        row = []
        for kx in range(kernel_size):
            row.append(
                grid[
                    :,
                    ky : ky + strides * (rows - 1) + 1 : strides,
                    kx : kx + strides * (columns - 1) + 1 : strides,
                ]
            )
        offsets.append(ops.stack(row, axis=3))
    return ops.stack(offsets, axis=3)


def _spread(values, strides, fill, axis):
    """Puts `strides - 1` fill entries after each entry along `axis`, none
    after the last."""
    if strides == 1:
        return values
    padding = ops.full_like(values, fill)
    spread = ops.stack([values] + [padding] * (strides - 1), axis=axis + 1)
    shape = list(ops.shape(values))
    shape[axis] = shape[axis] * strides
    spread = ops.reshape(spread, shape)
    keep = (values.shape[axis] - 1) * strides + 1
    return spread[(slice(None),) * axis + (slice(0, keep),)]


def fold_patches(patches, grid_size, strides, reduction="sum"):
    """Reduces patch values onto the child grid: the transpose of
    `extract_patches` for `"sum"`, the largest value reaching each child
    for `"max"`.

    Args:
        patches: `(batch, H', W', K, K, ...)`.
        grid_size: `(H, W)` of the child grid.
        strides: int `s`.
        reduction: `"sum"` or `"max"`.

    Returns:
        `(batch, H, W, ...)`. Children outside every receptive field get 0
        (`"sum"`) or a very large negative number (`"max"`).
    """
    fill = 0.0 if reduction == "sum" else _LOWEST
    height, width = grid_size
    kernel_size = patches.shape[3]
    rows, columns = patches.shape[1], patches.shape[2]
    trailing = [[0, 0]] * (len(patches.shape) - 5)
    # Strided parents land `s` children apart: spread once for every
    # kernel offset, not once per offset (a sixth of the graph with its
    # gradient, the same values).
    spread = _spread(_spread(patches, strides, fill, 1), strides, fill, 2)
    result = None
    for ky in range(kernel_size):
        for kx in range(kernel_size):
            placed = ops.pad(
                spread[:, :, :, ky, kx],
                [
                    [0, 0],
                    [ky, height - ky - (rows - 1) * strides - 1],
                    [kx, width - kx - (columns - 1) * strides - 1],
                ]
                + trailing,
                constant_values=fill,
            )
            if result is None:
                result = placed
            elif reduction == "sum":
                result = result + placed
            else:
                result = dtype_keeping.maximum(result, placed)
    return result
