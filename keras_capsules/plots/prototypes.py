"""The prototypes figure of capsule regression (Saul eq. 30, Figure 4)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from keras_capsules.plots.latent_space import squashed_latents  # noqa: E402


def prototype_indices(layer, features, labels):
    """Returns `(m, d)` prototype indices (eq. 30).

    x*_ia = argmax over l with y_l = i of Psi_ia(x_l)^2.

    A class without examples gets index -1.

    Examples:

        >>> from keras_capsules.layers import CapsuleRegression
        >>> labels = np.arange(30) % 3
        >>> features = np.random.default_rng(0).normal(size=(30, 6))
        >>> layer = CapsuleRegression(3, 2)
        >>> indices = prototype_indices(layer, features, labels)
        >>> indices.shape, bool((labels[indices].T == np.arange(3)).all())
        ((3, 2), True)
    """
    latents = squashed_latents(layer, features) ** 2  # (n, m, d)
    labels = np.asarray(labels)
    m, d = layer.num_classes, layer.capsule_dim
    indices = np.full((m, d), -1, np.int64)
    for i in range(m):  # One argmax per class: m is small.
        members = np.flatnonzero(labels == i)
        if len(members):
            indices[i] = members[np.argmax(latents[members, i, :], axis=0)]
    return indices


def plot_prototypes(layer, features, labels, images, path, class_names=None):
    """Writes the grid of prototypes: row i class, column a latent axis.

    Args:
        layer: a built `CapsuleRegression`.
        features: `(n, p)` training inputs.
        labels: `(n,)` their labels.
        images: `(n, H, W)` or `(n, H, W, 1)` images shown for them.
        path: PNG file to write.
        class_names: optional row labels.

    Returns:
        The path written.

    Examples:

        >>> import os, tempfile
        >>> images = np.random.default_rng(0).uniform(size=(40, 8, 8))
        >>> path = os.path.join(tempfile.mkdtemp(), "prototypes.png")
        >>> from keras_capsules.layers import CapsuleRegression
        >>> features = images.reshape(40, 64)  # the images themselves
        >>> layer = CapsuleRegression(num_classes=4, capsule_dim=2)
        >>> plot_prototypes(layer, features, np.arange(40) % 4, images, path)
        '...prototypes.png'
    """
    indices = prototype_indices(layer, features, labels)
    images = np.asarray(images)
    if images.ndim == 4:
        images = images[..., 0]
    m, d = indices.shape
    names = class_names or [str(i) for i in range(m)]
    figure, axes = plt.subplots(
        m, d, figsize=(0.9 * d + 0.6, 0.9 * m + 0.4), squeeze=False
    )
    for i in range(m):
        for a in range(d):
            axis = axes[i, a]
            if indices[i, a] >= 0:
                axis.imshow(images[indices[i, a]], cmap="gray_r")
            axis.set_xticks([])
            axis.set_yticks([])
            if a == 0:
                axis.set_ylabel(names[i], fontsize=8)
    figure.suptitle("Prototypes (eq. 30)", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
