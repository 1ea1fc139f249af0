"""Set transformer blocks: ISAB equivariance, PMA invariance, masks."""

import numpy as np
import pytest

from keras_capsules import layers
from tests.every_backend import numpy


def test_induced_set_attention_is_permutation_equivariant():
    layer = layers.InducedSetAttention(num_inducing_points=3, num_heads=2)
    x = np.random.default_rng(0).normal(size=(2, 6, 4)).astype("float32")
    order = np.array([3, 0, 5, 1, 4, 2])
    np.testing.assert_allclose(
        numpy(layer(x[:, order])), numpy(layer(x))[:, order], atol=1e-5
    )


def test_pooling_is_permutation_invariant():
    layer = layers.PoolingByMultiheadAttention(num_seeds=2, num_heads=2)
    x = np.random.default_rng(1).normal(size=(2, 6, 4)).astype("float32")
    order = np.array([5, 4, 3, 2, 1, 0])
    np.testing.assert_allclose(
        numpy(layer(x[:, order])), numpy(layer(x)), atol=1e-5
    )


@pytest.mark.parametrize(
    "layer",
    [
        layers.InducedSetAttention(num_inducing_points=3, num_heads=2),
        layers.PoolingByMultiheadAttention(num_seeds=1, num_heads=2),
    ],
    ids=["isab", "pma"],
)
def test_masked_elements_change_no_output(layer):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = np.array([[True] * 3 + [False] * 2] * 2)
    padded = x.copy()
    padded[:, 3:] = rng.normal(size=(2, 2, 4)) * 100
    got, want = layer(padded, mask=mask), layer(x, mask=mask)
    if got.shape[1] == 5:  # equivariant: compare the real elements
        got, want = got[:, :3], want[:, :3]
    np.testing.assert_allclose(numpy(got), numpy(want), atol=1e-5)


def test_heads_must_divide_features():
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        layers.InducedSetAttention(num_heads=3)(np.zeros((1, 2, 4)))
