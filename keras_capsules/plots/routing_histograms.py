"""Histograms of vote distances to the class capsules' means after each
EM routing iteration (Hinton, Sabour, Frosst 2018, Fig. 2)."""

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_capsules.layers import em_activation, legacy  # noqa: E402
from keras_capsules.ops.em_routing import em_routing_trace  # noqa: E402


def vote_distances(model, images, layer_name="class_capsules"):
    """Routes `images` through `model` and returns, per routing iteration
    of its `MatrixCapsuleEMRouting` layer, `(distances, assignments)`, both
    `(batch, n_in, n_out)`: `|V_ij - mu_j|` (Euclidean over the 16 pose
    entries) and `R_ij`.

    Examples:

        >>> from keras_capsules.models import small_matrix_capsnet
        >>> model = small_matrix_capsnet(5, (28, 28, 1), routing="paper")

        >>> trace = vote_distances(model, np.zeros((2, 28, 28, 1)))
        >>> len(trace), tuple(trace[0][0].shape)  # (batch, n_in, n_out)
        (3, (2, 144, 5))
    """
    layer = model.get_layer(layer_name)
    inputs = keras.Model(model.input, layer.input)(images)
    logits, poses = (ops.cast(x, "float32") for x in inputs)
    # A model saved before the capsule contract was the only form passes
    # activations, not their logits.
    former = isinstance(layer, legacy.FormerMatrixCapsuleEMRouting)
    activations = logits if former else ops.sigmoid(logits)
    votes = layer.votes(poses)
    batch = ops.shape(votes)[0]
    trace = em_routing_trace(
        votes,
        ops.reshape(activations, (batch, -1)),
        ops.cast(layer.beta_u, "float32"),
        ops.cast(layer.beta_a, "float32"),
        layer.inverse_temperature_weight,
        cost=em_activation.op_cost(layer, votes.shape[1]),
    )
    votes = ops.convert_to_numpy(votes)
    results = []
    for routing, means in trace:
        means = ops.convert_to_numpy(means)
        distances = np.linalg.norm(votes - means[:, None], axis=-1)
        results.append((distances, ops.convert_to_numpy(routing)))
    return results


def plot_vote_distances(
    model,
    images,
    path,
    class_names=None,
    layer_name="class_capsules",
    bins=40,
):
    """Writes one row per image and one panel per routing iteration: for
    each class capsule, the histogram of its votes' distances to its mean,
    each vote weighted by its assignment probability `R_ij`.

    Args:
        model: a model with a `MatrixCapsuleEMRouting` layer, e.g. from
            `models.matrix_capsnet`.
        images: a few images `(n, H, W, C)`.
        path: PNG file to write.
        class_names: optional names for the legend.
        layer_name: name of the routing layer. Defaults to
            `"class_capsules"`.
        bins: int, histogram bins.

    Returns:
        The path written.

    Examples:

        >>> from keras_capsules.models import small_matrix_capsnet
        >>> model = small_matrix_capsnet(5, (28, 28, 1), routing="paper")
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "figure.png")

        >>> plot_vote_distances(model, np.zeros((1, 28, 28, 1)), path) == path
        True
    """
    trace = vote_distances(model, images, layer_name)
    count, num_classes = len(images), trace[0][0].shape[-1]
    names = class_names or [str(j) for j in range(num_classes)]
    top = max(float(np.percentile(d, 99)) for d, _ in trace)
    edges = np.linspace(0.0, top, bins + 1)
    figure, axes = plt.subplots(
        count,
        len(trace),
        figsize=(3.2 * len(trace), 2.4 * count),
        squeeze=False,
        sharex=True,
    )
    for row in range(count):
        for column, (distances, routing) in enumerate(trace):
            axis = axes[row, column]
            for j in range(num_classes):
                axis.hist(
                    distances[row, :, j],
                    bins=edges,
                    weights=routing[row, :, j],
                    histtype="step",
                    label=names[j],
                )
            if row == 0:
                axis.set_title(f"iteration {column + 1}")
            if row == count - 1:
                axis.set_xlabel("distance of vote to mean")
    axes[0, -1].legend(fontsize="x-small", loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
