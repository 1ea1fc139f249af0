"""A procedural dataset of 2-D objects made of parts, at random affine poses.

Each class is an object made of two to four stroke parts placed in its own
frame. An image renders one object under a random pose (rotation, scale,
translation); the pose is returned as the label's companion, so equivariance
and viewpoint generalisation can be measured. No download: the images are
drawn from a seed.

Splits share one object catalogue and differ in seed and pose range:

```none
split         examples  rotation           seed offset
train         10000     |angle| <= 30 deg  0
validation    2000      |angle| <= 30 deg  1
test          2000      |angle| <= 30 deg  2     (familiar viewpoints)
test_novel    2000      30 < |angle| <= 180 deg  3  (novel viewpoints)
```
"""

import numpy as np

# Strokes (x0, y0, x1, y1) of each object in its own frame, within [-1, 1].
_OBJECTS = {
    "tee": [(-0.8, 0.7, 0.8, 0.7), (0.0, 0.7, 0.0, -0.8)],
    "ell": [(-0.5, 0.8, -0.5, -0.7), (-0.5, -0.7, 0.6, -0.7)],
    "cross": [(-0.7, -0.7, 0.7, 0.7), (-0.7, 0.7, 0.7, -0.7)],
    "triangle": [
        (-0.8, -0.6, 0.8, -0.6),
        (0.8, -0.6, 0.0, 0.8),
        (0.0, 0.8, -0.8, -0.6),
    ],
    "square": [
        (-0.6, -0.6, 0.6, -0.6),
        (0.6, -0.6, 0.6, 0.6),
        (0.6, 0.6, -0.6, 0.6),
        (-0.6, 0.6, -0.6, -0.6),
    ],
    "arrow": [
        (0.0, -0.8, 0.0, 0.8),
        (0.0, 0.8, -0.5, 0.3),
        (0.0, 0.8, 0.5, 0.3),
    ],
    "aitch": [
        (-0.6, -0.8, -0.6, 0.8),
        (0.6, -0.8, 0.6, 0.8),
        (-0.6, 0.0, 0.6, 0.0),
    ],
    "zed": [
        (-0.7, 0.7, 0.7, 0.7),
        (0.7, 0.7, -0.7, -0.7),
        (-0.7, -0.7, 0.7, -0.7),
    ],
    "fork": [
        (0.0, -0.8, 0.0, 0.1),
        (0.0, 0.1, -0.6, 0.8),
        (0.0, 0.1, 0.6, 0.8),
    ],
    "ladder": [
        (-0.5, -0.8, -0.5, 0.8),
        (0.5, -0.8, 0.5, 0.8),
        (-0.5, 0.4, 0.5, 0.4),
        (-0.5, -0.4, 0.5, -0.4),
    ],
}
SHAPE_NAMES = tuple(_OBJECTS)
_MAX_PARTS = max(len(parts) for parts in _OBJECTS.values())

_SPLITS = {  # name: (examples, seed offset, novel viewpoints)
    "train": (10000, 0, False),
    "validation": (2000, 1, False),
    "test": (2000, 2, False),
    "test_novel": (2000, 3, True),
}
_FAMILIAR_ANGLE = np.pi / 6
_SCALE_RANGE = (0.75, 1.0)
_SHIFT_PIXELS = 2.0
_STROKE_HALF_WIDTH = 0.12  # In object units.
_EDGE_SOFTNESS = 0.04
# Images drawn at once: bounds the renderer's memory to tens of MB.
_RENDER_CHUNK = 1000


def _segment_table():
    """Returns `(C, P, 4)` strokes padded to P parts, and the `(C, P)` mask."""
    segments = np.zeros((len(_OBJECTS), _MAX_PARTS, 4), np.float32)
    mask = np.zeros((len(_OBJECTS), _MAX_PARTS), np.float32)
    for c, parts in enumerate(_OBJECTS.values()):
        segments[c, : len(parts)] = parts
        mask[c, : len(parts)] = 1.0
    return segments, mask


def render_shapes(labels, poses, image_size=28):
    """Renders objects at poses.

    Args:
        labels: `(n,)` ints, object classes.
        poses: `(n, 4)` floats: rotation (radians), scale, shift x, shift y
            (pixels).
        image_size: int, height and width.

    Returns:
        float32 `(n, image_size, image_size, 1)` images in `[0, 1]`.

    Examples:

        >>> images = render_shapes(np.array([0, 1]), np.array([[0.0, 1.0, 0, 0],
        ...                                                    [0.5, 0.8, 2,
        ...                                                     -1]]))
        >>> images.shape, float(images.max()) <= 1.0
        ((2, 28, 28, 1), True)
    """
    labels = np.asarray(labels)
    poses = np.asarray(poses, np.float32)
    images = [
        _render_chunk(
            labels[i : i + _RENDER_CHUNK],
            poses[i : i + _RENDER_CHUNK],
            image_size,
        )
        for i in range(0, len(labels), _RENDER_CHUNK)
    ]
    if not images:
        return np.zeros((0, image_size, image_size, 1), np.float32)
    return np.concatenate(images)


def _render_chunk(labels, poses, image_size):
    """Ink of the nearest stroke at every pixel, `(n, H, W, 1)`."""
    segments, mask = _segment_table()
    half = (image_size - 1) / 2.0
    grid = (np.arange(image_size, dtype=np.float32) - half) / half
    gx, gy = np.meshgrid(grid, -grid)  # y up, like the object frame.
    points = np.stack([gx.ravel(), gy.ravel()], -1)  # (H*W, 2)
    angle, scale = poses[:, 0], poses[:, 1]
    shift = poses[:, 2:] / half
    # Pixel -> object frame: undo the shift, rotate back, unscale.
    local = points[None] - shift[:, None]  # (n, H*W, 2)
    cos, sin = np.cos(angle)[:, None], np.sin(angle)[:, None]
    x = (cos * local[..., 0] + sin * local[..., 1]) / scale[:, None]
    y = (-sin * local[..., 0] + cos * local[..., 1]) / scale[:, None]
    # Strokes as separate coordinates: arrays with a last axis of 2 are
    # several times slower in NumPy, for the same floats.
    seg = segments[labels][..., None]  # (n, P, 4, 1)
    x0, y0, x1, y1 = seg[:, :, 0], seg[:, :, 1], seg[:, :, 2], seg[:, :, 3]
    dx, dy = x1 - x0, y1 - y0  # (n, P, 1)
    length2 = np.maximum(dx**2 + dy**2, 1e-12)
    px, py = x[:, None] - x0, y[:, None] - y0  # (n, P, H*W)
    t = np.clip((px * dx + py * dy) / length2, 0.0, 1.0)
    rx, ry = px - t * dx, py - t * dy
    distance = np.sqrt(rx * rx + ry * ry)
    ink = 1.0 / (
        1.0 + np.exp((distance - _STROKE_HALF_WIDTH) / _EDGE_SOFTNESS)
    )  # (n, P, H*W)
    ink = np.max(ink * mask[labels][..., None], axis=1)
    return ink.reshape(-1, image_size, image_size, 1).astype(np.float32)


def sample_poses(rng, count, novel):
    """Draws `(count, 4)` poses; familiar |angle| <= 30 deg, novel beyond."""
    if novel:
        magnitude = rng.uniform(_FAMILIAR_ANGLE, np.pi, count)
        angle = magnitude * rng.choice([-1.0, 1.0], count)
    else:
        angle = rng.uniform(-_FAMILIAR_ANGLE, _FAMILIAR_ANGLE, count)
    scale = rng.uniform(*_SCALE_RANGE, count)
    shift = rng.uniform(-_SHIFT_PIXELS, _SHIFT_PIXELS, (count, 2))
    return np.column_stack([angle, scale, shift]).astype(np.float32)


def load_procedural_shapes(
    split="train", num_examples=None, image_size=28, seed=0
):
    """Returns a split of the procedural dataset as NumPy arrays.

    Args:
        split: `"train"`, `"validation"`, `"test"` (familiar viewpoints) or
            `"test_novel"` (novel viewpoints).
        num_examples: optional int overriding the split's size.
        image_size: int, height and width of the images.
        seed: int; the same seed gives the same data.

    Returns:
        A dict with `"image"` float32 `(n, H, W, 1)` in `[0, 1]`, `"label"`
        int64 `(n,)` and `"pose"` float32 `(n, 4)` (rotation in radians,
        scale, shift x and y in pixels).

    Examples:

        >>> data = load_procedural_shapes("test_novel", num_examples=5)
        >>> {name: value.shape for name, value in data.items()}
        {'image': (5, 28, 28, 1), 'label': (5,), 'pose': (5, 4)}
    """
    if split not in _SPLITS:
        raise ValueError(
            f"Unknown split {split!r}. Expected one of {tuple(_SPLITS)}."
        )
    count, offset, novel = _SPLITS[split]
    count = count if num_examples is None else int(num_examples)
    rng = np.random.default_rng([seed, offset])
    labels = rng.integers(0, len(SHAPE_NAMES), count)
    poses = sample_poses(rng, count, novel)
    return {
        "image": render_shapes(labels, poses, image_size),
        "label": labels.astype(np.int64),
        "pose": poses,
    }
