"""The latent-space figure of capsule regression (Saul eq. 29, Figure 2)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402


def squashed_latents(layer, features):
    """Returns Psi_i(x) = W_i x / sqrt(sum_j |W_j x|^2), `(n, m, d)` (eq. 29).

    Each `Psi_i(x)` lies in the unit ball and `|Psi_i(x)|^2` is
    `P(y = i | h = E[h | x])`.

    Examples:

        >>> from keras_capsules.layers import CapsuleRegression
        >>> features = np.random.default_rng(0).normal(size=(30, 6))
        >>> layer = CapsuleRegression(3, 2)
        >>> latents = squashed_latents(layer, features)
        >>> squared_lengths = np.sum(latents**2, axis=(1, 2))
        >>> latents.shape, bool((squared_lengths <= 1 + 1e-6).all())
        ((30, 3, 2), True)
    """
    means = ops.convert_to_numpy(layer.prior_means(features)).astype(np.float64)
    total = np.sqrt(np.sum(means**2, axis=(1, 2), keepdims=True))
    return means / np.maximum(total, np.finfo(np.float64).tiny)


def plot_latent_space(
    layer, features, labels, path, class_names=None, max_points=3000, seed=0
):
    """Writes one scatter panel per capsule of its squashed 2-D latents.

    Args:
        layer: a built `CapsuleRegression` with `capsule_dim == 2`.
        features: `(n, p)` inputs (e.g. test set).
        labels: `(n,)` class labels, used for colour.
        path: PNG file to write.
        class_names: optional names for the panel titles.
        max_points: int, at most this many points are drawn.
        seed: int, which points are drawn when there are more.

    Returns:
        The path written.

    Examples:

        >>> import os, tempfile
        >>> from keras_capsules.layers import CapsuleRegression
        >>> path = os.path.join(tempfile.mkdtemp(), "latent_space.png")
        >>> layer = CapsuleRegression(num_classes=3, capsule_dim=2)
        >>> layer.build((None, 6))
        >>> inputs = np.random.default_rng(1).normal(size=(40, 6))
        >>> plot_latent_space(layer, inputs, np.arange(40) % 3, path) == path
        True
    """
    if layer.capsule_dim != 2:
        raise ValueError(
            "The latent-space figure draws 2-D capsules; this layer has "
            f"capsule_dim={layer.capsule_dim}. Use `plot_prototypes` instead."
        )
    features, labels = np.asarray(features), np.asarray(labels)
    if len(features) > max_points:
        keep = np.random.default_rng(seed).choice(
            len(features), max_points, replace=False
        )
        features, labels = features[keep], labels[keep]
    latents = squashed_latents(layer, features)
    m = layer.num_classes
    names = class_names or [str(i) for i in range(m)]
    columns = min(m, 5)
    rows = -(-m // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(2.6 * columns, 2.6 * rows), squeeze=False
    )
    colours = plt.get_cmap("tab10" if m <= 10 else "tab20")
    circle = np.linspace(0, 2 * np.pi, 200)
    for i, axis in enumerate(axes.flat):
        if i >= m:
            axis.axis("off")
            continue
        axis.plot(np.cos(circle), np.sin(circle), color="0.6", lw=0.8)
        axis.scatter(
            latents[:, i, 0],
            latents[:, i, 1],
            s=2,
            c=[colours(int(c) % colours.N) for c in labels],
        )
        axis.set_title(f"capsule {names[i]}", fontsize=9)
        axis.set_xlim(-1.05, 1.05)
        axis.set_ylim(-1.05, 1.05)
        axis.set_aspect("equal")
        axis.set_xticks([])
        axis.set_yticks([])
    handles = [
        plt.Line2D(
            [],
            [],
            marker="o",
            ls="",
            color=colours(c % colours.N),
            label=names[c],
        )
        for c in range(m)
    ]
    figure.legend(
        handles=handles,
        loc="lower center",
        ncol=min(m, 10),
        fontsize=8,
        frameon=False,
    )
    figure.suptitle(
        "Squashed latents Psi_i(x) (Saul eq. 29), colour = label", fontsize=10
    )
    figure.tight_layout(rect=(0, 0.06, 1, 0.95))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
