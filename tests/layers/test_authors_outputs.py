"""The new routing families against their authors' code's outputs on
fixed inputs and weights (made by authors_outputs/make_authors_outputs.py,
which says how), on every Keras backend."""

import os

import numpy as np
from absl.testing import absltest

from keras_capsules import layers
from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, numpy

_OUTPUTS = os.path.join(os.path.dirname(__file__), "authors_outputs")
# The authors' PyTorch layers ran in float64; ours agree to its rounding,
# amplified by at most a few hundred through 3 iterations.
_FLOAT64_TOLERANCE = 1e-10
# The authors' VB routing computes its constants D ln 2, D ln 2 pi and
# ln(2 pi e) in float32 (relative error 6e-8), then adds them in float64:
# its logits are off by up to 16 ln 2 * 6e-8 = 7e-7 (the responsibilities
# and means do not depend on them: they cancel over the parents).
_FLOAT32_CONSTANTS_TOLERANCE = 1e-6
# Efficient-CapsNet's layer computes in float32 (it casts its scale to
# float32): one float32 rounding error of outputs of size < 1, amplified
# by the sums over 6 inputs.
_FLOAT32_TOLERANCE = 2e-6


def _load(family):
    with np.load(os.path.join(_OUTPUTS, f"{family}.npz")) as arrays:
        return dict(arrays)


def _logit(probability):
    return np.log(probability) - np.log1p(-probability)


def _set_weights(layer, inputs, **weights):
    layer(inputs)  # Builds the weights.
    for name, value in weights.items():
        getattr(layer, name).assign(value)
    return layer(inputs)


class AuthorsOutputsTest(TestCase):
    def test_self_attention_routing_matches_efficient_capsnet(self):
        arrays = _load("self_attention")
        vectors = arrays["vectors"]  # (b, i, d), each of length < 1
        lengths = np.linalg.norm(vectors, axis=-1)
        layer = layers.SelfAttentionRouting(3, 4)
        logits, capsules = _set_weights(
            layer,
            [_logit(lengths), vectors[:, :, None, :]],
            kernel=np.transpose(arrays["W"], (1, 0, 2, 3)),  # W[j, i]
            coupling_priors=arrays["b"][..., 0].T,  # b[j, i, 0]
        )
        self.assertAllClose(
            numpy(capsules)[:, :, 0],
            arrays["capsules"],
            atol=_FLOAT32_TOLERANCE,
            rtol=_FLOAT32_TOLERANCE,
        )
        self.assertAllClose(
            1 / (1 + np.exp(-numpy(logits))),
            np.linalg.norm(arrays["capsules"], axis=-1),
            atol=1e-5,  # |v| to float32 precision, through the logit.
        )

    def test_inverted_attention_routing_matches_capsule_fc(self):
        arrays = _load("inverted_attention")
        poses = arrays["poses"].reshape(2, 6, 4, 4)  # p_i as 4x4, 'bnax'
        for iterations in (1, 2, 3):
            layer = layers.InvertedAttentionRouting(
                3, 4, num_iterations=iterations, dtype="float64"
            )
            _, parents = _set_weights(
                layer,
                [np.zeros((2, 6)), poses],
                kernel=np.transpose(arrays["w"], (0, 3, 1, 2)),  # w[i,:,:,j]
                norm_scale=arrays["scale"],
                norm_offset=arrays["offset"],
            )
            self.assertAllClose(
                numpy(parents).reshape(2, 3, 16),
                arrays[f"parents_{iterations - 1}"],
                atol=_FLOAT64_TOLERANCE,
                rtol=_FLOAT64_TOLERANCE,
            )

    def test_variational_bayes_routing_matches_class_capsules(self):
        arrays = _load("variational_bayes")
        logits, means = capsule_ops.variational_bayes_routing(
            arrays["votes"],
            arrays["activations"],
            arrays["beta_u"],
            arrays["beta_a"],
            num_iterations=3,
        )
        # The authors' batch norm, in evaluation mode at its initial
        # statistics, divides by sqrt(1 + 1e-5); then the sigmoid.
        batch_norm = np.sqrt(1 + 1e-5)
        self.assertAllClose(
            1 / (1 + np.exp(-numpy(logits) / batch_norm)),
            arrays["outputs"],
            atol=_FLOAT32_CONSTANTS_TOLERANCE,
            rtol=0,
        )
        self.assertAllClose(
            numpy(means) / batch_norm,
            arrays["means"],
            atol=_FLOAT64_TOLERANCE,
            rtol=_FLOAT64_TOLERANCE,
        )

    def test_self_routing_matches_self_routing_2d(self):
        arrays = _load("self_routing")
        layer = layers.SelfRouting(3, 4, dtype="float64")
        vote_weights = arrays["W1"].reshape(6, 3, 4, 8)  # W1[i, j D + d, c]
        logits, poses = _set_weights(
            layer,
            [_logit(arrays["activations"]), arrays["poses"][:, :, None, :]],
            kernel=np.transpose(vote_weights, (0, 1, 3, 2)),
            routing_kernel=np.transpose(arrays["W2"], (0, 2, 1)),
            routing_bias=arrays["b2"][0, 0],
        )
        self.assertAllClose(
            1 / (1 + np.exp(-numpy(logits))),
            arrays["outputs"],
            atol=_FLOAT64_TOLERANCE,
            rtol=_FLOAT64_TOLERANCE,
        )
        self.assertAllClose(
            numpy(poses)[:, :, 0],
            arrays["parent_poses"],
            atol=_FLOAT64_TOLERANCE,
            rtol=_FLOAT64_TOLERANCE,
        )


if __name__ == "__main__":
    absltest.main()
