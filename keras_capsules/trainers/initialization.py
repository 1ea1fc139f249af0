"""Design-matrix moments and initial kernels for capsule regression EM.

```none
paper                        code
x_l                          design rows z_l = [x_l - mean, 1] (q entries)
X_i X_i^T / n_i              second moment of capsule i's examples
(xi_ia, v_ia), a = 1..d      its top-d eigenpairs
W_i = rows v_ia^T / (sqrt(d) sqrt(xi_ia))                      (eq. 28)
```
"""

import numpy as np

# Eigenvalues below this fraction of the largest are raised to it, so
# 1 / sqrt(xi) stays finite (eq. 28) when inputs span fewer than d directions.
_RELATIVE_EIGENVALUE_FLOOR = 1e-10
# Added to the Gram matrix's diagonal, relative to its mean diagonal: keeps
# the least-squares solve defined when inputs are collinear (e.g. constant
# pixels), and is far below the data's own scale.
_RELATIVE_RIDGE = 1e-7


def design_moments(counts, sums, grams, center, offset):
    """Per-class Gram matrices of the design rows z = [x - mean, 1].

    Args:
        counts: `(C,)` examples per class.
        sums: `(C, p)` per-class sums of the raw inputs.
        grams: `(C, p, p)` per-class sums of x x^T.
        center: bool, whether to subtract the mean of all inputs.
        offset: bool, whether to append a constant 1.

    Returns:
        `(mean, design_grams)`: the `(p,)` mean subtracted (zeros without
        centring) and the `(C, q, q)` Gram matrices of the design rows.
    """
    mean = sums.sum(0) / counts.sum() if center else np.zeros(sums.shape[1])
    centred_sums = sums - counts[:, None] * mean
    centred_grams = (
        grams
        - np.einsum("cp,q->cpq", sums, mean)
        - np.einsum("p,cq->cpq", mean, sums)
        + counts[:, None, None] * np.outer(mean, mean)
    )
    if offset:
        top = np.concatenate([centred_grams, centred_sums[:, :, None]], 2)
        bottom = np.concatenate(
            [centred_sums[:, None, :], counts[:, None, None]], 2
        )
        centred_grams = np.concatenate([top, bottom], 1)
    return mean, centred_grams


def subspace_kernel(membership, counts, grams, capsule_dim):
    """Subspace initialisation (eq. 28) of every capsule of every model.

    Args:
        membership: `(K, m, C)` which classes each capsule stands for.
        counts: `(C,)` examples per class.
        grams: `(C, q, q)` per-class Gram matrices of the design rows.
        capsule_dim: int, d.

    Returns:
        `(K, q, m, d)` kernels.
    """
    d = capsule_dim
    capsule_counts = np.einsum("kic,c->ki", membership, counts)
    if np.any(capsule_counts < d):
        raise ValueError(
            "Subspace initialisation needs at least capsule_dim examples "
            f"for every capsule; the fewest was {capsule_counts.min():.0f} "
            f"for capsule_dim={d}. Use initializer='random' or more data."
        )
    second_moments = np.einsum("kic,cpq->kipq", membership, grams)
    second_moments /= capsule_counts[:, :, None, None]
    eigenvalues, eigenvectors = np.linalg.eigh(second_moments)
    xi = eigenvalues[..., ::-1][..., :d]  # (K, m, d), largest first.
    vectors = eigenvectors[..., ::-1][..., :d]  # (K, m, q, d)
    xi = np.maximum(xi, _RELATIVE_EIGENVALUE_FLOOR * xi[..., :1])
    kernel = vectors / np.sqrt(d * xi)[:, :, None, :]
    return np.transpose(kernel, (0, 2, 1, 3))


def random_kernel(membership, q, capsule_dim, seed):
    """Gaussian kernels with standard deviation 1 / sqrt(q), `(K, q, m, d)`."""
    k, m, _ = membership.shape
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0 / np.sqrt(q), (k, q, m, capsule_dim))


def inverse_model_grams(membership, design_grams):
    """`(K, q, q)`: the inverse of eq. 22's `sum_l z_l z_l^T` for each
    model, over the classes it sees (`membership` `(K, m, C)`), from the
    per-class `design_grams` `(C, q, q)`, with a relative ridge."""
    model_grams = np.einsum("kc,cpq->kpq", membership.max(axis=1), design_grams)
    ridge = (
        _RELATIVE_RIDGE
        * np.einsum("kpp->k", model_grams)
        / model_grams.shape[-1]
    )
    return np.linalg.inv(
        model_grams + ridge[:, None, None] * np.eye(model_grams.shape[-1])
    )


def initial_state(
    moments, membership, capsule_dim, use_offset, center_inputs, initializer
):
    """What EM starts from, given the training inputs' per-class moments.

    Args:
        moments: `(counts (C,), sums (C, p), grams (C, p, p))` of the
            inputs of each class.
        membership: `(K, m, C)`, `architectures.membership`.
        capsule_dim: int, `d`.
        use_offset, center_inputs: bools, the design rows' form.
        initializer: `("subspace", _)` (eq. 28) or `("random", seed)`.

    Returns:
        `(input_mean (p,), inverse_grams (K, q, q), kernel (K, q, m, d))`.
    """
    counts, sums, grams = moments
    p = sums.shape[-1] + int(use_offset)
    if capsule_dim > p:
        raise ValueError(
            f"`CapsuleRegressionEM` expects `capsule_dim` <= the number "
            f"of features{' + 1 (offset)' if use_offset else ''}, "
            f"{p}: each capsule is a projection of them. Received: "
            f"capsule_dim={capsule_dim}."
        )
    if np.any(counts == 0):
        raise ValueError(
            "Every class needs training examples. Classes without any: "
            f"{np.flatnonzero(counts == 0).tolist()}."
        )
    input_mean, design_grams = design_moments(
        counts, sums, grams, center_inputs, use_offset
    )
    inverse_grams = inverse_model_grams(membership, design_grams)
    kind, seed = initializer
    if kind == "random":
        kernel = random_kernel(
            membership, design_grams.shape[-1], capsule_dim, seed
        )
    else:
        kernel = subspace_kernel(membership, counts, design_grams, capsule_dim)
    return input_mean, inverse_grams, kernel
