"""Linear probes: how linearly decodable the classes are from features."""

import keras
import numpy as np


def linear_probe_accuracy(
    train_features,
    train_labels,
    test_sets,
    epochs=50,
    batch_size=256,
    learning_rate=1e-2,
    seed=0,
):
    """Trains softmax regression on features and reports its accuracy.

    The evaluation of Smith et al. (2020, section 5.1): a linear
    classifier on latent variables of an unsupervised model. Features are
    standardised with the training set's mean and std.

    Args:
        train_features: `(n, f)` features of the probe's training set.
        train_labels: `(n,)` int classes.
        test_sets: `{name: (features, labels)}`.
        epochs: int, passes of Adam over the probe's training set.
        batch_size: int, examples per step.
        learning_rate: float, Adam's learning rate.
        seed: int.

    Returns:
        `{name: accuracy}` for every test set.

    Examples:

        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 2, 200)
        >>> features = labels[:, None] + rng.normal(0.0, 0.1, (200, 3))
        >>> accuracy = linear_probe_accuracy(
        ...     features, labels, {"train": (features,
        ...                        labels)}, learning_rate=0.1)
        >>> accuracy["train"] > 0.95
        True
    """
    train_features = np.asarray(train_features, np.float32)
    if train_features.ndim != 2:
        raise ValueError(
            "`linear_probe_accuracy` expects features of shape (n, f). "
            f"Received: {train_features.shape}. Flatten per-capsule "
            "features first."
        )
    mean = train_features.mean(0)
    std = train_features.std(0) + 1e-6
    num_classes = 1 + int(
        max(
            np.max(train_labels),
            *(np.max(labels) for _, labels in test_sets.values()),
        )
    )
    keras.utils.set_random_seed(seed)
    probe = keras.Sequential(
        [
            keras.Input((train_features.shape[1],)),
            keras.layers.Dense(num_classes),
        ]
    )
    probe.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    probe.fit(
        (train_features - mean) / std,
        np.asarray(train_labels),
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
    )
    # Accuracy from the trained weights: argmax of the logits, as Keras's
    # sparse categorical accuracy takes it, without tracing an evaluation
    # for every test set.
    kernel, bias = probe.get_weights()

    def accuracy(features, labels):
        standardised = (np.asarray(features, np.float32) - mean) / std
        predicted = np.argmax(standardised @ kernel + bias, axis=-1)
        return float(np.mean(predicted == np.asarray(labels)))

    return {
        name: accuracy(features, labels)
        for name, (features, labels) in test_sets.items()
    }
