"""The margin loss of capsule lengths (Sabour, Frosst, Hinton 2017, eq. 4)."""

from keras import ops

from keras_capsules.ops.arguments import check_targets_like


def margin_loss(
    targets,
    lengths,
    positive_margin=0.9,
    negative_margin=0.1,
    negative_weight=0.5,
):
    """Returns the margin loss of each example (Sabour et al., eq. 4).

    ```none
    paper    code              default
    T_k      targets           1 if class k is present, else 0
    |v_k|    lengths
    m+       positive_margin   0.9
    m-       negative_margin   0.1
    lambda   negative_weight   0.5

    L = sum_k T_k max(0, m+ - |v_k|)^2
          + lambda (1 - T_k) max(0, |v_k| - m-)^2
    ```

    Args:
        targets: float `(batch, n)`, one-hot or multi-hot class presence.
        lengths: float `(batch, n)` capsule lengths.
        positive_margin: float `m+`.
        negative_margin: float `m-`.
        negative_weight: float `lambda`, down-weights absent classes.

    Returns:
        `(batch,)` losses, summed over classes.

    Examples:

        >>> targets = np.array([[1.0, 0.0]])
        >>> float(margin_loss(targets, np.array([[0.95, 0.05]]))[0])  # met
        0.0
        >>> round(float(margin_loss(targets, np.array([[0.5, 0.5]]))[0]), 4)
        0.24
    """
    lengths = ops.convert_to_tensor(lengths)
    targets = ops.cast(targets, lengths.dtype)
    check_targets_like("margin_loss", targets, lengths, "lengths")
    present = targets * ops.square(ops.relu(positive_margin - lengths))
    absent = (1.0 - targets) * ops.square(ops.relu(lengths - negative_margin))
    return ops.sum(present + negative_weight * absent, axis=-1)
