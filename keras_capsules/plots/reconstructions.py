"""Inputs above their reconstructions (Sabour et al. 2017, Figure 3)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _grey(image):
    image = np.asarray(image, np.float32)
    return image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image


def plot_reconstructions(
    images, reconstructions, path, labels=None, predictions=None
):
    """Writes a two-row grid: inputs on top, their reconstructions below.

    Args:
        images: `(n, H, W)` or `(n, H, W, C)` inputs in [0, 1].
        reconstructions: the decoder's outputs, same shape.
        path: PNG file to write.
        labels: optional `(n,)` true classes, shown above the inputs.
        predictions: optional `(n,)` predicted classes, shown below.

    Examples:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")

        >>> images = np.random.default_rng(0).uniform(size=(4, 8, 8))
        >>> plot_reconstructions(images, images, path, labels=[0, 1, 2, 3])
        >>> os.path.exists(path)
        True
    """
    count = len(images)
    figure, axes = plt.subplots(
        2, count, figsize=(1.2 * count, 2.6), squeeze=False
    )
    for k in range(count):
        for row, picture in enumerate((images[k], reconstructions[k])):
            axis = axes[row, k]
            axis.imshow(_grey(picture), cmap="gray", vmin=0, vmax=1)
            axis.set_xticks([])
            axis.set_yticks([])
        if labels is not None:
            axes[0, k].set_title(f"label {labels[k]}", fontsize=8)
        if predictions is not None:
            axes[1, k].set_title(f"pred. {predictions[k]}", fontsize=8)
    axes[0, 0].set_ylabel("input")
    axes[1, 0].set_ylabel("decoded")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def perturbation_grid(decode, capsules, class_index, deltas):
    """Decodes one example's capsules with one dimension of the chosen class
    capsule shifted by each delta (Sabour et al. sec. 5.1, Figure 4).

    Args:
        decode: callable `(k, n, d)` masked capsules -> `(k, H, W[, C])`.
        capsules: `(n, d)` capsules of one example.
        class_index: int, the capsule to perturb (usually the longest).
        deltas: `(s,)` offsets added to each dimension in turn.

    Returns:
        `(d, s, H, W[, C])` decoded images: row a shifts dimension a.

    Examples:

        >>> def decode(masked):  # (k, n, d) -> (k, 4, 4) images
        ...     return np.repeat(masked.sum(axis=(1, 2))[:, None, None], 16, 1
        ...                      ).reshape(-1, 4, 4)
        >>> grid = perturbation_grid(decode, np.zeros((10, 16)), 3, [-0.1, 0.1])
        >>> grid.shape
        (16, 2, 4, 4)
    """
    capsules = np.asarray(capsules, np.float32)
    deltas = np.asarray(deltas, np.float32)
    num_capsules, dim = capsules.shape
    masked = np.zeros_like(capsules)
    masked[class_index] = capsules[class_index]
    grid = np.repeat(masked[None, None], dim, 0).repeat(len(deltas), 1)
    rows = np.arange(dim)
    grid[rows, :, class_index, rows] += deltas[None, :]  # (d, s, n, d)
    decoded = np.asarray(decode(grid.reshape(-1, num_capsules, dim)))
    return decoded.reshape(dim, len(deltas), *decoded.shape[1:])


def plot_capsule_perturbations(
    decode, capsules, class_index, path, deltas=None
):
    """Writes the perturbation grid: row a varies capsule dimension a.

    Args:
        decode: callable `(k, n, d)` masked capsules -> images.
        capsules: `(n, d)` capsules of one example.
        class_index: int, the capsule to perturb.
        path: PNG file to write.
        deltas: offsets; defaults to the paper's -0.25..0.25 by 0.05.

    Examples:

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")

        >>> def decode(masked):  # (k, n, d) -> (k, 4, 4) images
        ...     return np.repeat(masked.sum(axis=(1, 2))[:, None, None], 16, 1
        ...                      ).reshape(-1, 4, 4)
        >>> plot_capsule_perturbations(decode, np.zeros((10, 16)), 3, path)
        >>> os.path.exists(path)
        True
    """
    if deltas is None:
        deltas = np.linspace(-0.25, 0.25, 11)
    grid = perturbation_grid(decode, capsules, class_index, deltas)
    dim, steps = grid.shape[:2]
    figure, axes = plt.subplots(
        dim, steps, figsize=(0.7 * steps, 0.7 * dim), squeeze=False
    )
    for a in range(dim):
        for s in range(steps):
            axis = axes[a, s]
            axis.imshow(_grey(grid[a, s]), cmap="gray", vmin=0, vmax=1)
            axis.set_xticks([])
            axis.set_yticks([])
        axes[a, 0].set_ylabel(str(a), rotation=0, fontsize=7, labelpad=8)
    for s, delta in enumerate(deltas):
        axes[0, s].set_title(f"{delta:+.2f}", fontsize=6)
    figure.suptitle(f"capsule {class_index}: one dimension varied per row")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
