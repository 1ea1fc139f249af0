"""Strided 2-D convolution through the discrete Fourier transform, written
as dense products with small DFT matrices.

A large kernel makes the direct convolution expensive: CapsNet's
PrimaryCaps (9x9, stride 2, 256 -> 256 channels on a 20x20 map) takes
36 * 81 multiply-adds per pair of channels. In the frequency domain the
same pair takes one complex product per frequency of the 20x20 map's half
spectrum, 220 of them, done as three real products (Gauss): 660, 4.4x
fewer. The Fourier transforms are products with small DFT matrices
(`H x H` and `W x W`), so the whole convolution, and through automatic
differentiation its gradients, is nothing but matrix products.
"""

import keras
from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.spectral_dft_matrices import dft_matrices

# `spectral` is chosen where it needs at most this fraction of the direct
# convolution's multiply-adds: its transforms are skinny products, which
# run below the machine's matmul rate.
SPECTRAL_ADVANTAGE = 0.5


def spectral_conv2d(inputs, kernel, strides=1, padding="valid"):
    """The strided cross-correlation that `keras.layers.Conv2D` computes
    (no bias), by the correlation theorem.

    ```none
    math                                        code        shape
    x[h, w, c]                                  inputs      (batch, H, W, C)
    k[r, s, c, o]                               kernel      (kh, kw, C, O)
    y[i, j, o] = sum_{r,s,c} x[sh*i + r, sw*j + s, c] k[r, s, c, o]
                                                result      (batch, H', W', O)
    X[u, v, c] = sum_{h,w} x[h, w, c] exp(-2 pi i (u h / H + v w / W))
    K[u, v, c, o]: the same transform of k, zero-padded to H x W
    Y[u, v, o] = sum_c X[u, v, c] conj(K[u, v, c, o])
    y[i, j, o] = (1 / HW) sum_{u,v} Y[u, v, o]
                     * exp(2 pi i (u sh i / H + v sw j / W))
    ```

    The transform has the input's own size, `H x W`: a circular
    correlation of that length equals the linear one at every valid
    position (`sh*i + r <= H - 1`), so nothing wraps around. `y` is real,
    so only the half spectrum `v <= W // 2` is formed, and only the
    strided output positions are transformed back. Each complex product
    is three real ones (Gauss): with `a = X`, `b = conj(K)`,
    `t1 = b_re (a_re + a_im)`, `t2 = a_re (b_im - b_re)`,
    `t3 = a_im (b_re + b_im)`, `Y_re = t1 - t3`, `Y_im = t1 + t2`; the
    DFT matrices form the three components and recombine them.

    Values agree with the direct convolution to rounding (about 1e-6 of
    the output's scale in float32). Unlike the direct convolution, a NaN
    or infinity in an image reaches every output of that image. Half
    precision (`float16`, `bfloat16`) is computed in float32 and cast back.

    Args:
        inputs: `(batch, H, W, C)` images, `H` and `W` known.
        kernel: `(kh, kw, C, O)`, at most the image's size.
        strides: int or pair `(sh, sw)`.
        padding: `"valid"` (the formula above) or `"same"` (the images
            first zero-padded as `Conv2D` pads them, to `ceil(H / sh)`
            rows and `ceil(W / sw)` columns out).

    Returns:
        `(batch, H', W', O)`, the dtype of `inputs`; valid padding gives
        `H' = (H - kh) // sh + 1`, `W' = (W - kw) // sw + 1`.

    Examples:

        >>> images = np.random.default_rng(0).normal(size=(2, 12, 12, 3))
        >>> kernel = np.random.default_rng(1).normal(size=(9, 9, 3, 8))
        >>> spectral = spectral_conv2d(images, kernel)
        >>> direct = ops.conv(images, kernel)
        >>> tuple(spectral.shape), bool(np.allclose(spectral, direct,
        ...       atol=1e-6))
        ((2, 4, 4, 8), True)
    """
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    if padding == "same":
        inputs = _padded_as_same(inputs, kernel.shape, _pair(strides))
    elif padding != "valid":
        raise ValueError(
            "`spectral_conv2d` expects `padding` to be 'valid' or 'same'. "
            f"Received: padding={padding!r}."
        )
    height, width, channels, kernel_shape, strides = _checked_shapes(
        inputs.shape, kernel.shape, strides
    )
    compute = "float64" if dtype == "float64" else "float32"
    matrices = {
        name: ops.convert_to_tensor(matrix, compute)
        for name, matrix in dft_matrices(
            height, width, kernel_shape, strides
        ).items()
    }
    half, rows = width // 2 + 1, 3 * height  # V, (component, u)
    kernel_height, kernel_width, _, filters = kernel_shape
    out_height = (height - kernel_height) // strides[0] + 1
    out_width = (width - kernel_width) // strides[1] + 1

    # Spectrum of the images: over w, then over h into the 3 components.
    x = ops.transpose(ops.cast(inputs, compute), (2, 1, 0, 3))  # (W, H, b, C)
    x = dtype_keeping.matmul(matrices["width"], ops.reshape(x, (width, -1)))
    x = ops.reshape(x, (half, 2 * height, -1))  # (V, (re/im, h), b*C)
    x = dtype_keeping.matmul(matrices["input_height"][None], x)  # (V, 3H, b*C)
    x = ops.reshape(x, (half * rows, -1, channels))

    # Spectrum of the kernel, zero-padded to H x W (the padding's columns
    # are left out of the DFT matrices).
    k = ops.transpose(ops.cast(kernel, compute), (1, 0, 2, 3))  # (kw, kh, C, O)
    k = dtype_keeping.matmul(
        matrices["kernel_width"], ops.reshape(k, (kernel_width, -1))
    )
    k = ops.reshape(k, (half, 2 * kernel_height, -1))
    k = dtype_keeping.matmul(matrices["kernel_height"][None], k)  # (V, 3H, C*O)
    k = ops.reshape(k, (half * rows, channels, filters))

    # One real product per component and frequency, then back to space
    # at the strided output positions: over u, then over v.
    y = ops.reshape(dtype_keeping.matmul(x, k), (half, rows, -1))
    # (V, 3H, b*O) above; (V, 2H', b*O) below.
    y = dtype_keeping.matmul(matrices["output_height"][None], y)
    y = dtype_keeping.matmul(
        matrices["output_width"], ops.reshape(y, (2 * half, -1))
    )
    # The batch size named, not -1: TFLite's converter gives a -1 between
    # known sizes a static shape it cannot allocate ("BytesRequired number
    # of elements overflowed").
    batch = ops.shape(inputs)[0]
    y = ops.reshape(y, (out_width, out_height, batch, filters))
    return ops.cast(ops.transpose(y, (2, 1, 0, 3)), dtype)


def convolution_multiply_adds(
    image_size, kernel_shape, strides=1, padding="valid"
):
    """Multiply-adds per image of the direct and the spectral convolution.

    Args:
        image_size: `(H, W)`.
        kernel_shape: `(kh, kw, C, O)`.
        strides: int or pair.
        padding: `"valid"` or `"same"`.

    Returns:
        dict with `direct` and `spectral`, each an int. The spectral count
        leaves out the kernel's transform, shared by the whole batch.
    """
    kernel_height, kernel_width, channels, filters = kernel_shape
    strides = _pair(strides)
    height, width = image_size
    if padding == "same":
        height, width = (
            size + sum(_same_padding(size, kernel_size, stride))
            for size, kernel_size, stride in zip(
                image_size, kernel_shape[:2], strides
            )
        )
    out_height = (height - kernel_height) // strides[0] + 1
    out_width = (width - kernel_width) // strides[1] + 1
    half = width // 2 + 1
    direct = out_height * out_width * kernel_height * kernel_width
    spectral_products = 3 * height * half * channels * filters
    input_transform = channels * (
        2 * half * width * height + half * 3 * height * 2 * height
    )
    output_transform = filters * (
        half * 2 * out_height * 3 * height + out_width * 2 * half * out_height
    )
    return {
        "direct": direct * channels * filters,
        "spectral": spectral_products + input_transform + output_transform,
    }


def spectral_is_cheaper(image_size, kernel_shape, strides=1, padding="valid"):
    """Whether `spectral_conv2d` needs at most `SPECTRAL_ADVANTAGE` of the
    direct convolution's multiply-adds (False for an unknown size)."""
    if image_size is None or None in tuple(image_size):
        return False
    if padding == "valid" and any(
        k > n for k, n in zip(kernel_shape[:2], image_size)
    ):
        return False
    count = convolution_multiply_adds(
        image_size, kernel_shape, strides, padding
    )
    return count["spectral"] <= SPECTRAL_ADVANTAGE * count["direct"]


def _padded_as_same(inputs, kernel_shape, strides):
    """Zero-pads `inputs` as `Conv2D(padding="same")` does."""
    if None in tuple(inputs.shape[1:3]):
        return inputs  # `_checked_shapes` says what is missing.
    pads = [
        _same_padding(size, kernel_size, stride)
        for size, kernel_size, stride in zip(
            inputs.shape[1:3], kernel_shape[:2], strides
        )
    ]
    return ops.pad(inputs, [(0, 0), *pads, (0, 0)])


def _same_padding(size, kernel_size, stride):
    """`(before, after)` zeros of one axis under `padding="same"`:
    `ceil(size / stride)` outputs, the larger half after the image."""
    outputs = -(-size // stride)
    total = max((outputs - 1) * stride + kernel_size - size, 0)
    return total // 2, total - total // 2


def _pair(value):
    if isinstance(value, int):
        return (value, value)
    return tuple(int(v) for v in value)


def _checked_shapes(input_shape, kernel_shape, strides):
    strides = _pair(strides)
    if len(input_shape) != 4 or None in tuple(input_shape[1:]):
        raise ValueError(
            "`spectral_conv2d` expects images of shape (batch, H, W, C) "
            f"with known H, W, C. Received: {tuple(input_shape)}. Give the "
            "model a fixed image size, or use the direct convolution."
        )
    height, width, channels = (int(size) for size in input_shape[1:])
    kernel_shape = tuple(int(size) for size in kernel_shape)
    if len(kernel_shape) != 4 or kernel_shape[2] != channels:
        raise ValueError(
            "`spectral_conv2d` expects a kernel of shape (kh, kw, C, O) "
            f"with C = {channels}, the images' channels. Received: "
            f"kernel shape {kernel_shape}."
        )
    if kernel_shape[0] > height or kernel_shape[1] > width:
        raise ValueError(
            "`spectral_conv2d` expects a kernel no larger than the image. "
            f"Received: kernel {kernel_shape[:2]} on an image of size "
            f"{(height, width)}."
        )
    if len(strides) != 2 or min(strides) < 1:
        raise ValueError(
            "`spectral_conv2d` expects positive strides. Received: "
            f"strides={strides}."
        )
    return height, width, channels, kernel_shape, strides
