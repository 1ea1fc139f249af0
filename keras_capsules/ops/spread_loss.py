"""The spread loss of class activations (Hinton, Sabour, Frosst 2018,
eq. 3)."""

from keras import ops

from keras_capsules.ops.arguments import check_targets_like


def spread_loss(targets, activations, margin):
    """Returns the spread loss of each example (eq. 3).

    ```none
    paper   code
    a_t     activation of the target class
    a_i     activations of the other classes
    m       margin

    L = sum_{i != t} max(0, m - (a_t - a_i))^2
    ```

    Args:
        targets: float `(batch, n)`, one-hot targets.
        activations: float `(batch, n)` class activations.
        margin: float `m`.

    Returns:
        `(batch,)` losses.

    Examples:

        >>> targets = np.array([[1.0, 0.0, 0.0]])
        >>> activations = np.array([[0.9, 0.8, 0.1]])
        >>> round(float(spread_loss(targets, activations, 0.2)[0]), 4)  # 0.1^2
        0.01
    """
    activations = ops.convert_to_tensor(activations)
    targets = ops.cast(targets, activations.dtype)
    check_targets_like("spread_loss", targets, activations, "activations")
    target_activation = ops.sum(targets * activations, axis=-1, keepdims=True)
    gaps = ops.relu(margin - (target_activation - activations))
    return ops.sum((1.0 - targets) * ops.square(gaps), axis=-1)
