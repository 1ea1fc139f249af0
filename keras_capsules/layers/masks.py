"""Masks of layers that take `[activations, poses]` or `[scores, capsules]`."""

from keras import ops


def combined_input_mask(mask):
    """One capsule mask from the Keras masks of a layer's inputs (True
    where every input's mask is True), or from a mask passed directly;
    None if there is none."""
    if isinstance(mask, (list, tuple)):
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        mask = masks[0]
        for other in masks[1:]:
            mask = ops.logical_and(mask, other)
    return mask
