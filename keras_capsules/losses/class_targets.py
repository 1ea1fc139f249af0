"""The labels a capsule loss takes, checked and turned into targets."""

from keras import ops

from keras_capsules.ops import labels as label_checks


def class_targets(loss_name, labels, num_classes, multi_hot=True):
    """Class ids `(batch,)` or `(batch, 1)`, or one-hot (with `multi_hot`,
    also multi-hot) `(batch, num_classes)`, as float targets
    `(batch, num_classes)`.

    Ids must be whole numbers in `[0, num_classes)`; targets must hold
    only 0 and 1 (exactly one 1 per row unless `multi_hot`). A bad label
    raises (`ops.labels`); under XLA the checks are compiled out, and an
    id outside the range then counts as no class present.
    """
    labels = ops.convert_to_tensor(labels)
    rank = len(labels.shape)
    if rank == 2 and labels.shape[-1] == num_classes != 1:
        targets = ops.cast(labels, "float32")
        kind = "multi-hot" if multi_hot else "one-hot"
        conditions = [
            (
                ops.all(ops.logical_or(targets == 0.0, targets == 1.0)),
                f"{kind} targets of 0s and 1s",
            )
        ]
        if not multi_hot:
            conditions.append(
                (
                    ops.all(ops.sum(targets, axis=-1) == 1.0),
                    "one-hot targets with one 1 per row (one class per "
                    "example)",
                )
            )
        return label_checks.checked(loss_name, targets, labels, conditions)
    if rank not in (1, 2) or (rank == 2 and labels.shape[-1] != 1):
        raise ValueError(
            f"`{loss_name}` expects labels as class ids (batch,) or "
            f"{'one-hot / multi-hot' if multi_hot else 'one-hot'} "
            f"(batch, {num_classes}). Received shape "
            f"{tuple(labels.shape)}."
        )
    ids = label_checks.class_ids(loss_name, labels, num_classes)
    return ops.one_hot(ids, num_classes)
