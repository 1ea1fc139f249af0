"""The real DFT matrices with which `spectral_conv2d` transforms images,
kernels and outputs (the correlation theorem as dense products)."""

import functools

import numpy as np


@functools.lru_cache(maxsize=64)
def dft_matrices(height, width, kernel_shape, strides):
    """The six real matrices of `spectral_conv2d`, in float64.

    Rows and columns name their axes: `(re/im, h)` is re and im parts
    stacked, each over h. The three Gauss components `j` of the images'
    spectrum are `[re + im, re, im]`, of the kernel's conjugated spectrum
    `[re, im - re, re + im]`.
    """
    kernel_height, kernel_width = kernel_shape[:2]
    stride_height, stride_width = strides
    out_height = (height - kernel_height) // stride_height + 1
    out_width = (width - kernel_width) // stride_width + 1
    half = width // 2 + 1

    # Over w: real -> (v, re/im), exp(-i phi) = cos(phi) - i sin(phi).
    phi = 2 * np.pi * np.outer(np.arange(half), np.arange(width)) / width
    over_width = np.stack([np.cos(phi), -np.sin(phi)], axis=1)  # (V, 2, W)

    # Over h: complex (re/im, h) -> u. X_re = cos T_re + sin T_im,
    # X_im = -sin T_re + cos T_im.
    alpha = 2 * np.pi * np.outer(np.arange(height), np.arange(height)) / height
    cos, sin = np.cos(alpha), np.sin(alpha)  # (u, h)
    spectrum_re = np.concatenate([cos, sin], axis=1)  # (u, (re/im, h))
    spectrum_im = np.concatenate([-sin, cos], axis=1)
    input_height = np.stack(
        [spectrum_re + spectrum_im, spectrum_re, spectrum_im]
    )  # (j, u, (re/im, h))

    # The kernel's rows and columns are the first kh, kw of the image's.
    kernel_re = np.concatenate(
        [cos[:, :kernel_height], sin[:, :kernel_height]], axis=1
    )
    kernel_im = np.concatenate(
        [-sin[:, :kernel_height], cos[:, :kernel_height]], axis=1
    )
    # conj(K): re = K_re, im = -K_im.
    kernel_height_matrix = np.stack(
        [kernel_re, -kernel_im - kernel_re, kernel_re - kernel_im]
    )

    # Back over u at rows sh*i, with a = 2 pi u sh i / H and b the
    # column's angle: re(Y exp(i(a + b))) = cos(b) P + sin(b) Q, where
    # P = re(Y exp(i a)) and Q = -im(Y exp(i a)). With Y_re = t1 - t3 and
    # Y_im = t1 + t2, summed over u:
    #   P = t1 (cos a - sin a) - t2 sin a - t3 cos a,
    #   Q = -t1 (cos a + sin a) - t2 cos a + t3 sin a.
    angle = (
        2
        * np.pi
        * np.outer(stride_height * np.arange(out_height), np.arange(height))
        / height
    )
    cos_a, sin_a = np.cos(angle), np.sin(angle)  # (i, u)
    p = np.concatenate([cos_a - sin_a, -sin_a, -cos_a], axis=1)  # (i, (j, u))
    q = np.concatenate([-(sin_a + cos_a), -cos_a, sin_a], axis=1)
    output_height = np.concatenate([p, q], axis=0)  # ((P/Q, i), (j, u))

    # Back over v at columns sw*j, each v counted twice but for v = 0 and
    # v = W / 2, scaled by 1 / HW.
    beta = (
        2
        * np.pi
        * np.outer(stride_width * np.arange(out_width), np.arange(half))
        / width
    )
    weight = np.full(half, 2.0)
    weight[0] = 1.0
    if width % 2 == 0:
        weight[-1] = 1.0
    weight /= height * width
    output_width = np.stack(
        [np.cos(beta) * weight, np.sin(beta) * weight], axis=2
    )  # (j, v, P/Q)
    return {
        "width": over_width.reshape(2 * half, width),
        "input_height": input_height.reshape(3 * height, 2 * height),
        "kernel_width": over_width[:, :, :kernel_width].reshape(
            2 * half, kernel_width
        ),
        "kernel_height": kernel_height_matrix.reshape(
            3 * height, 2 * kernel_height
        ),
        "output_height": output_height,
        "output_width": output_width.reshape(out_width, 2 * half),
    }
