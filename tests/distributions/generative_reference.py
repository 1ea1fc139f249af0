"""NumPy versions of the generative capsule model, written from the paper.

Smith, Schut, Gal and van der Wilk (2020): eqs. 1-7, one loop per sum,
no vectorisation, so the library's vectorised code has an independent
check.
"""

import itertools
import math

import numpy as np


def normal_pdf(x, mean, scale):
    return np.exp(-0.5 * ((x - mean) / scale) ** 2) / (
        np.sqrt(2 * np.pi) * scale
    )


def normal_cdf(x):
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x) / np.sqrt(2.0)))


def ks_statistic(samples, cdf):
    """Kolmogorov-Smirnov distance between samples and a CDF; below
    `2 / sqrt(n)` at the 99.9% level for a correct CDF."""
    ordered = np.sort(samples)
    n = len(ordered)
    values = cdf(ordered)
    above = np.arange(1, n + 1) / n - values
    below = values - np.arange(n) / n
    return max(above.max(), below.max())


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def logistic_pdf(y, loc, scale):
    z = (y - loc) / scale
    return np.exp(-z) / (scale * (1.0 + np.exp(-z)) ** 2)


def selection_probabilities(parent_presences, affinities, clutter_affinity):
    """Eq. 3 for one example: `(n_p + 1, n_c)`, row 0 the dummy parent."""
    n_p, n_c = affinities.shape
    pi = np.zeros((n_p + 1, n_c))
    for j in range(n_c):
        weights = [clutter_affinity] + [
            affinities[i, j] * parent_presences[i] for i in range(n_p)
        ]
        pi[:, j] = np.array(weights) / sum(weights)
    return pi


def component_density(presence, pose, i, j, params, temperature=None):
    """`p(t_j, A_j | s_j = i)`, eqs. 4-6 (relaxed: see CapsuleConditional).

    `presence` is `t_j` (binary) or its relaxed logit `y_j`.
    """
    gamma_logit = params["presence_logits"][i, j]
    if i == 0:
        mean = np.zeros_like(pose)
        scale = params["clutter_pose_scale"]
    else:
        mean = params["pose_predictions"][i - 1, j]
        scale = params["pose_scales"][i - 1, j]
    on = np.prod(normal_pdf(pose, mean, scale))
    off = np.prod(normal_pdf(pose, 0.0, params["off_pose_scale"]))
    if temperature is None:
        gamma = sigmoid(gamma_logit)
        if presence == 1:
            return gamma * on
        return (1 - gamma) * off
    t = sigmoid(presence)
    presence_density = logistic_pdf(
        presence, gamma_logit / temperature, 1.0 / temperature
    )
    return presence_density * (t * on + (1 - t) * off)


def brute_force_log_prob(
    parent_presences, presences, poses, params, temperature=None
):
    """`log sum_s prod_j p(s_j) p(t_j, A_j | s_j)` over every selection."""
    n_p, n_c = params["affinities"].shape
    pi = selection_probabilities(
        parent_presences, params["affinities"], params["clutter_affinity"]
    )
    total = 0.0
    for selection in itertools.product(range(n_p + 1), repeat=n_c):
        term = 1.0
        for j, i in enumerate(selection):
            term *= pi[i, j] * component_density(
                presences[j], poses[j], i, j, params, temperature
            )
        total += term
    return np.log(total)


def affine(deviation):
    """6 deviations -> the 3x3 matrix I + A."""
    matrix = np.eye(3)
    matrix[:2] += np.reshape(deviation, (2, 3))
    return matrix


def child_pose_predictions(parent_poses, pose_offsets):
    """Eq. 5's means `(I + A_i) M_ij - I` as 6 deviations, `(n_p, n_c, 6)`,
    from parent poses `(n_p, 6)` and offsets `m_ij`, `(n_p, n_c, 6)`."""
    n_p, n_c = pose_offsets.shape[:2]
    predictions = np.zeros((n_p, n_c, 6))
    for i in range(n_p):
        for j in range(n_c):
            product = affine(parent_poses[i]) @ affine(pose_offsets[i, j])
            predictions[i, j] = (product - np.eye(3))[:2].ravel()
    return predictions


def bilinear_sample(image, row, col):
    """`image[row, col]` interpolated, zero outside (one pixel)."""
    height, width = image.shape[:2]
    value = np.zeros(image.shape[2:])
    r0, c0 = int(np.floor(row)), int(np.floor(col))
    for r in (r0, r0 + 1):
        for c in (c0, c0 + 1):
            if 0 <= r < height and 0 <= c < width:
                weight = (1 - abs(row - r)) * (1 - abs(col - c))
                value = value + weight * image[r, c]
    return value


def template_coordinates(pose, template_size, image_size, p, q):
    """Where image pixel `(p, q)` falls in a template, in template pixels
    `(row, col)`, for one capsule's `pose`.

    Pixel `(p, q)` of an `H x W` image sits at `x = (2q + 1)/W - 1`,
    `y = (2p + 1)/H - 1`; template pixel `(r, c)` of an `s_h x s_w`
    template sits at `u = ((2c + 1)/s_w - 1) s_w / W`, likewise `v`, and
    the pose maps `(u, v)` to `(x, y)`.
    """
    height, width = image_size
    s_h, s_w = template_size
    matrix = np.eye(3)
    matrix[:2, :] += np.reshape(pose, (2, 3))
    x, y = (2 * q + 1) / width - 1, (2 * p + 1) / height - 1
    u, v, _ = np.linalg.inv(matrix) @ np.array([x, y, 1.0])
    col = ((u * width / s_w) + 1) * s_w / 2 - 0.5
    row = ((v * height / s_h) + 1) * s_h / 2 - 0.5
    return row, col


def warp(template, pose, image_size):
    """One template warped into an `image_size` image by `pose`."""
    height, width = image_size
    warped = np.zeros((height, width, template.shape[-1]))
    for p in range(height):
        for q in range(width):
            row, col = template_coordinates(
                pose, template.shape[:2], image_size, p, q
            )
            warped[p, q] = bilinear_sample(template, row, col)
    return warped


def render(templates, alphas, presences, poses, image_size):
    """Eq. 7's mean for one example: warp (`template_coordinates`), then
    `over` in capsule order."""
    height, width = image_size
    n, s_h, s_w = templates.shape[:3]
    colour = np.zeros((height, width, templates.shape[-1]))
    alpha = np.zeros((height, width, 1))
    for k in range(n):
        for p in range(height):
            for q in range(width):
                r, c = template_coordinates(
                    poses[k], (s_h, s_w), image_size, p, q
                )
                top_colour = bilinear_sample(templates[k], r, c)
                top_alpha = presences[k] * bilinear_sample(alphas[k], r, c)
                # over(top, P): C_o = (C_a a_a + C_b a_b (1 - a_a)) / a_o.
                new_alpha = top_alpha + alpha[p, q] * (1 - top_alpha)
                if new_alpha[0] > 0:
                    colour[p, q] = (
                        top_colour * top_alpha
                        + colour[p, q] * alpha[p, q] * (1 - top_alpha)
                    ) / new_alpha
                alpha[p, q] = new_alpha
    return colour * alpha  # over a black background
