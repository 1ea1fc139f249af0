"""AttentivePooling against a NumPy version of SCAE's part pooling."""

import numpy as np
import pytest

from keras_capsules import layers
from tests.every_backend import numpy


def test_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4, 5)).astype("float32")
    layer = layers.AttentivePooling(num_capsules=2, capsule_dim=3)
    got = numpy(layer(x))
    kernel, bias = (numpy(w) for w in layer.weights)
    for b in range(2):
        for n in range(2):
            heads = x[b].reshape(12, 5) @ kernel[:, n] + bias[n]  # (p, d+1)
            weights = np.exp(heads[:, -1] - heads[:, -1].max())
            weights /= weights.sum()
            np.testing.assert_allclose(
                got[b, n], weights @ heads[:, :-1], rtol=1e-5, atol=1e-6
            )


def test_rejects_vectors():
    with pytest.raises(ValueError, match=r"\(batch, H, W, C\)"):
        layers.AttentivePooling(2, 3)(np.zeros((1, 4, 5)))
