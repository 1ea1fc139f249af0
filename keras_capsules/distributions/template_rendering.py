"""Template rendering and the pixel likelihood (Smith et al., eq. 7).

Each bottom-layer capsule `j` owns a template `T_j` and an alpha channel
`alpha_j` (Tieleman, 2014). A template is warped into the image by its
pose, and the warped templates are alpha-composited in capsule order,
each alpha weighted by the capsule's presence `t_j`:

```none
P <- zeros;  for j = 1..n:  P <- over((I+A_j) T_j, t_j (I+A_j) alpha_j, P)
over: C_o = (C_a a_a + C_b a_b (1 - a_a)) / a_o,  a_o = a_a + a_b (1 - a_a)
X_pq | t, A ~ N(P_pq, sigma^2)
```

The image is the composite over a black background, `C_o a_o`, which in
closed form is `sum_j t_j a_j T_j prod_{k > j} (1 - t_k a_k)` (later
capsules are drawn on top).

Coordinates: `[-1, 1]` spans the image along each axis. A template's
pixels sit at their native size in those units (a 12-pixel template
spans 12/28 of a 28-pixel image at the identity pose), centred at 0, and
the pose maps template coordinates to image coordinates. Warping samples
the template bilinearly (zero outside) at `(I + A)^-1` of each pixel
centre: each image pixel reads the 2x2 template pixels around that point,
gathered from the template padded with a border of zeros, weighted by
their bilinear (tent) weights. Each of the four gathered taps has the
size of the warped templates, and nothing larger is formed.
"""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import poses as pose_lib

tfd = tfp.distributions

# |det| of a pose's linear part is floored here before inverting, so a
# degenerate pose (a template squashed to a line) renders finitely. Poses
# that shrink a template less than 1000-fold in area are untouched.
MIN_ABS_DETERMINANT = 1e-3

# Alphas are capped below 1 so every transmittance `prod (1 - a)` stays
# positive and its logarithm finite; the image changes by < 1e-6.
MAX_ALPHA = 1.0 - 1e-6


def _pixel_centres(size, dtype):
    """Centres of `size` pixels in [-1, 1] units."""
    return (2.0 * (tf.range(size, dtype=dtype) + 0.5)) / size - 1.0


def _bilinear_taps(positions, size):
    """The two template pixels around continuous pixel `positions` along
    one axis of `size` pixels, and their bilinear weights.

    Returns `(index, weight_low, weight_high)`, each shaped like
    `positions`: the taps are template pixels `floor(x)` and
    `floor(x) + 1`, weighted `1 - f` and `f` (`f` the fractional part),
    and `index` is the first one's place in the template padded with one
    zero pixel on each side (`floor(x) + 1`). Where neither tap lies in
    the template both weights are 0, as the tent weights `relu(1 - |x -
    c|)` of every template pixel `c` are.
    """
    low = tf.floor(positions)
    fraction = positions - low
    # Clipped before the cast, so that far-away positions stay integers.
    low = tf.clip_by_value(low, -2.0, float(size))
    inside = tf.cast((low >= -1.0) & (low <= size - 1.0), positions.dtype)
    index = tf.cast(tf.clip_by_value(low, -1.0, size - 1.0), tf.int32) + 1
    return index, inside * (1.0 - fraction), inside * fraction


def _inverse_linear_parts(poses):
    """`(I + A)^-1` of the 2x2 linear part, with a floored determinant."""
    matrices = pose_lib.affine_matrices(poses)
    a, b = matrices[..., 0, 0], matrices[..., 0, 1]
    c, d = matrices[..., 1, 0], matrices[..., 1, 1]
    determinant = a * d - b * c
    sign = tf.where(
        determinant >= 0, tf.ones_like(determinant), -tf.ones_like(determinant)
    )
    determinant = sign * tf.maximum(tf.abs(determinant), MIN_ABS_DETERMINANT)
    inverse = tf.stack([tf.stack([d, -b], -1), tf.stack([-c, a], -1)], -2)
    # expand_dims, not new-axis slices, throughout: LiteRT's builtin ops
    # take no new-axis slice of a tensor of unknown size.
    determinant = tf.expand_dims(tf.expand_dims(determinant, -1), -1)
    return inverse / determinant, matrices[..., :2, 2]


def warp_templates(templates, poses, image_size):
    """Warps every template into the image by its capsule's pose.

    Args:
        templates: `(n, s_h, s_w, k)` templates (any channels, e.g. colour
            and alpha stacked).
        poses: `(batch, n, 6)` pose deviations `A` (see `poses`).
        image_size: `(H, W)`.

    Returns:
        `(batch, n, H, W, k)` warped templates, zero outside.

    Examples:

        >>> warped = warp_templates(np.ones((3, 5, 5, 2), "float32"),
        ...                         np.zeros((2, 3, 6), "float32"), (12, 12))
        >>> tuple(warped.shape)
        (2, 3, 12, 12, 2)
    """
    templates = tf.convert_to_tensor(templates)
    dtype = templates.dtype
    height, width = image_size
    template_height, template_width = templates.shape[1], templates.shape[2]
    rows, cols = tf.meshgrid(
        _pixel_centres(height, dtype),
        _pixel_centres(width, dtype),
        indexing="ij",
    )
    pixels = tf.reshape(tf.stack([cols, rows], -1), [-1, 2])  # (o, xy)
    inverse, translation = _inverse_linear_parts(poses)  # (b, n, 2, 2)
    plane = tf.einsum(
        "bnpq,bnoq->bnop", inverse, pixels - tf.expand_dims(translation, -2)
    )  # template-plane coordinates of each pixel centre, (b, n, o, xy)
    col = plane[..., 0] * (width / 2.0) + (template_width - 1) / 2.0
    row = plane[..., 1] * (height / 2.0) + (template_height - 1) / 2.0
    col_index, col_low, col_high = _bilinear_taps(col, template_width)
    row_index, row_low, row_high = _bilinear_taps(row, template_height)
    # Every template pixel of every capsule, with a zero border, in rows:
    # `(n (s_h + 2) (s_w + 2), k)`.
    padded_width = template_width + 2
    padded = tf.pad(templates, [[0, 0], [1, 1], [1, 1], [0, 0]])
    pixels_per_template = (template_height + 2) * padded_width
    table = tf.reshape(padded, [-1, templates.shape[-1]])
    top_left = (
        tf.range(templates.shape[0])[:, None] * pixels_per_template
        + row_index * padded_width
        + col_index
    )  # the row of each pixel's top-left tap in `table`, (b, n, o)
    warped = 0.0
    for row_step, row_weight in ((0, row_low), (padded_width, row_high)):
        for col_step, col_weight in ((0, col_low), (1, col_high)):
            tap = tf.gather(table, top_left + row_step + col_step)
            weight = tf.expand_dims(row_weight * col_weight, -1)
            warped += weight * tap  # (b, n, o, k)
    batch, num = tf.shape(warped)[0], tf.shape(warped)[1]
    return tf.reshape(warped, [batch, num, height, width, templates.shape[-1]])


def alpha_composite(colours, alphas, presences):
    """Composites layers in order, later on top, over black.

    Args:
        colours: `(batch, n, H, W, C)` warped templates `T_j`.
        alphas: `(batch, n, H, W, 1)` warped alpha channels `alpha_j`.
        presences: `(batch, n)` presences `t_j` in [0, 1].

    Returns:
        `(batch, H, W, C)`: `sum_j t_j a_j T_j prod_{k>j} (1 - t_k a_k)`.

    Examples:

        >>> colours = np.stack([np.full((1, 2, 2, 1), 0.2),
        ...                     np.full((1, 2, 2, 1), 0.8)], axis=1)
        >>> image = alpha_composite(colours, np.ones((1, 2, 2, 2, 1)),
        ...                         np.ones((1, 2)))
        >>> round(float(image[0, 0, 0, 0]), 4)  # the later layer on top
        0.8
    """
    weights = tf.minimum(
        presences[:, :, None, None, None] * alphas, MAX_ALPHA
    )  # (b, n, H, W, 1)
    # log(1 - w), not log1p(-w), which ONNX lacks: 1 - w is exact for
    # w >= 1/2 and within float32's epsilon below, so the two differ by
    # at most about that epsilon.
    log_transmittance = tf.math.cumsum(
        tf.math.log(1.0 - weights), axis=1, exclusive=True, reverse=True
    )
    return tf.reduce_sum(colours * weights * tf.exp(log_transmittance), axis=1)


def render_templates(templates, alphas, presences, poses, image_size):
    """The composited image `P` of eq. 7, `(batch, H, W, C)`.

    Args:
        templates: `(n, s_h, s_w, C)` template colours `T_j` in [0, 1].
        alphas: `(n, s_h, s_w, 1)` alpha channels `alpha_j` in [0, 1].
        presences: `(batch, n)` presences `t_j`.
        poses: `(batch, n, 6)` poses `A_j`.
        image_size: `(H, W)`.

    Examples:

        >>> image = render_templates(
        ...     np.ones((3, 5, 5, 1), "float32"),
        ...     np.ones((3, 5, 5, 1), "float32"), np.ones((2, 3), "float32"),
        ...     np.zeros((2, 3, 6), "float32"), (12, 12))
        >>> tuple(image.shape)
        (2, 12, 12, 1)
    """
    warped = warp_templates(
        tf.concat([templates, alphas], axis=-1), poses, image_size
    )
    return alpha_composite(warped[..., :-1], warped[..., -1:], presences)


def template_image_likelihood(
    templates, alphas, presences, poses, image_size, pixel_scale
):
    """`p(X | t, A)`, eq. 7: independent `N(P_pq, pixel_scale^2)` pixels.

    Returns a `tfd.Independent` with batch shape `(batch,)` and event
    shape `(H, W, C)`.

    Examples:

        >>> likelihood = template_image_likelihood(
        ...     np.ones((3, 5, 5, 1), "float32"),
        ...     np.ones((3, 5, 5, 1), "float32"), np.ones((2, 3), "float32"),
        ...     np.zeros((2, 3, 6), "float32"), (12, 12), pixel_scale=0.2)
        >>> tuple(likelihood.log_prob(np.zeros((2, 12, 12, 1),
        ...       "float32")).shape)
        (2,)
    """
    mean = render_templates(templates, alphas, presences, poses, image_size)
    return tfd.Independent(
        tfd.Normal(mean, tf.cast(pixel_scale, mean.dtype)),
        reinterpreted_batch_ndims=3,
    )
