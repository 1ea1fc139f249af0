"""The matrix-capsule experiments' datasets and viewpoint splits, and the
images the model sees of each: what the scripts check their flags
against on every backend (`matrix_capsule_experiments` builds the
`tf.data` pipelines)."""

from keras_capsules.datasets.procedural_shapes import SHAPE_NAMES

DATASETS = ("smallnorb", "mnist", "fashion_mnist", "procedural_shapes")
VIEWPOINT_SPLITS = ("none", "azimuth", "elevation", "rotation")
# smallNORB's 48x48 images and the model's 32x32 crops of them.
SMALLNORB_SIZE, CROP = 48, 32


def dataset_info(name):
    """Returns `(image_shape, num_classes)` of what the model sees.

    Examples:

        >>> dataset_info("smallnorb")
        ((32, 32, 1), 5)
    """
    if name not in DATASETS:
        raise ValueError(
            f"Unknown dataset {name!r}. Expected one of {DATASETS}."
        )
    if name == "smallnorb":
        return (CROP, CROP, 1), 5
    if name == "procedural_shapes":
        return (28, 28, 1), len(SHAPE_NAMES)
    return (28, 28, 1), 10


def check_names(name, viewpoints):
    """Raises a ValueError unless `name` is one of `DATASETS` and
    `viewpoints` one of `VIEWPOINT_SPLITS` that it has."""
    if viewpoints not in VIEWPOINT_SPLITS:
        raise ValueError(
            f"Unknown viewpoint split {viewpoints!r}. Expected one of "
            f"{VIEWPOINT_SPLITS}."
        )
    dataset_info(name)
    allowed = {
        "smallnorb": ("azimuth", "elevation"),
        "procedural_shapes": ("rotation",),
    }.get(name, ())
    if viewpoints != "none" and viewpoints not in allowed:
        raise ValueError(
            f"{name!r} has no {viewpoints!r} viewpoint split. Expected one "
            f"of {('none',) + allowed}."
        )
