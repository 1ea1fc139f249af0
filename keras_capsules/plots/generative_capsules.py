"""Figures of the generative capsule model: templates (Smith et al., 2020,
Figure 6) and rows of images such as inputs over amortised and free-form
reconstructions (Figure 3)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _grey(image):
    image = np.asarray(image, np.float32)
    return image[..., 0] if image.shape[-1] == 1 else image


def plot_templates(decoder, path):
    """Writes each template's colour times its alpha (what it draws).

    Args:
        decoder: a built `GenerativeCapsuleDecoder`.
        path: PNG file to write.

    Examples:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(num_top_capsules=2,
        ...                                    num_template_capsules=4)
        >>> decoder.build()
        >>> plot_templates(decoder, path)
        >>> os.path.exists(path)
        True
    """
    templates, alphas = (np.asarray(x) for x in decoder.templates())
    drawn = templates * alphas
    count = len(drawn)
    columns = min(count, 8)
    rows = -(-count // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(1.1 * columns, 1.2 * rows), squeeze=False
    )
    for index, axis in enumerate(axes.flat):
        axis.set_xticks([])
        axis.set_yticks([])
        if index < count:
            axis.imshow(_grey(drawn[index]), cmap="gray", vmin=0, vmax=1)
            axis.set_title(f"T{index}", fontsize=7)
        else:
            axis.axis("off")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_image_rows(rows, path):
    """Writes one row of images per entry of `rows`, `{label: (n, H, W, C)}`
    (e.g. inputs, amortised reconstructions, free-form reconstructions).

    Examples:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")

        >>> images = np.random.default_rng(0).uniform(size=(3, 8, 8, 1))
        >>> plot_image_rows({"inputs": images, "reconstructions": images}, path)
        >>> os.path.exists(path)
        True
    """
    labels = list(rows)
    count = len(rows[labels[0]])
    figure, axes = plt.subplots(
        len(labels),
        count,
        figsize=(1.1 * count, 1.2 * len(labels)),
        squeeze=False,
    )
    for row, label in enumerate(labels):
        for k in range(count):
            axis = axes[row, k]
            image = np.clip(_grey(rows[label][k]), 0, 1)
            axis.imshow(image, cmap="gray", vmin=0, vmax=1)
            axis.set_xticks([])
            axis.set_yticks([])
        axes[row, 0].set_ylabel(label, fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
