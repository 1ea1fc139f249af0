"""The capsule contract's shapes: checks, grids as lists, input specs,
and the config entry that marks a layer saved in this form."""

import math

import keras
from keras import ops

# In the config of every layer that speaks the contract, in the form of
# this release: capsules as a list or a grid, logits and poses. Configs
# saved before say `"contract": True` (the first form: lists only),
# `"contract": False` (the paper's own form) or, older still, nothing:
# those load through `layers.legacy`.
VERSION = 2
MARKER = {"contract": VERSION}


def from_config(cls, config):
    """`cls` from `config`; from a config saved in an earlier form of
    `cls`, what `layers.legacy` makes of it: the layer itself where the
    form computes the same, else an adapter that computes what that form
    computed."""
    config = dict(config)
    version = config.pop("contract", False)
    if version == VERSION:
        return cls(**config)
    from keras_capsules.layers import legacy  # It subclasses the layers.

    return legacy.former_layer(cls, config, bool(version))


def capsule_shapes(layer, input_shape, shares_weights, routes_grids):
    """Checks `[logits, poses]` shapes and returns them as tuples.

    Logits are `(batch, n)` or, on a grid, `(batch, H, W, B)`; poses are
    the logits' shape followed by `(d_cov, d_in)`, both known. The
    capsule counts must be known unless every input shares the weights
    (`shares_weights`); on a grid routed as a grid (`routes_grids`) only
    the types `B` must be.
    """
    shapes = _pair(input_shape)
    valid = (
        shapes is not None
        and len(shapes[0]) in (2, 4)
        and len(shapes[1]) == len(shapes[0]) + 2
        and tuple(shapes[1][:-2])[1:] == tuple(shapes[0])[1:]
        and None not in shapes[1][-2:]
    )
    if valid and not shares_weights:
        grid = len(shapes[0]) == 4
        capsules = shapes[0][-1:] if grid and routes_grids else shapes[0][1:]
        valid = None not in capsules
    if not valid:
        count = "any number of" if shares_weights else "a known number of"
        raise ValueError(
            f"`{layer.name}` expects `[logits, poses]` of shapes (batch, "
            "n_in) and (batch, n_in, d_cov, d_in), or on a grid (batch, H, "
            f"W, B) and (batch, H, W, B, d_cov, d_in), with {count} input "
            f"capsules and known d_cov, d_in. Received: {input_shape}. "
            "Give vector capsules (batch, n, d) a pose axis of 1, e.g. "
            f"`poses[:, :, None]`.{layer._SHARED_WEIGHTS_HINT}"
        )
    return shapes


def _pair(input_shape):
    if (
        isinstance(input_shape, (list, tuple))
        and len(input_shape) == 2
        and all(isinstance(shape, (list, tuple)) for shape in input_shape)
    ):
        return [tuple(shape) for shape in input_shape]
    return None


def as_list(logits, poses, mask):
    """`(logits (batch, n), poses (batch, n, d_cov, d), mask)` of
    capsules on a grid (a list stays as it is), `n = H W B`, ordered by
    row, column and type."""
    if len(logits.shape) == 2:
        return logits, poses, mask
    grid = logits.shape[1:]
    count = -1 if None in grid else math.prod(grid)
    batch = ops.shape(logits)[0]
    logits = ops.reshape(logits, (batch, count))
    poses = ops.reshape(poses, (batch, count, *poses.shape[-2:]))
    if mask is not None:
        mask = ops.reshape(mask, (batch, count))
    return logits, poses, mask


def input_specs(input_shape, free_axes):
    """Keras `InputSpec`s that hold `[logits, poses]` to the sizes the
    layer was built for, but for the batch and `free_axes`: a call with
    another size then names the layer, the axis and both sizes."""
    return [
        keras.InputSpec(
            ndim=len(shape),
            axes={
                axis: size
                for axis, size in enumerate(tuple(shape))
                if axis > 0 and axis not in free_axes and size is not None
            },
        )
        for shape in input_shape
    ]
