"""The routing layers of the families published since 2019
(SelfAttentionRouting, InvertedAttentionRouting, VariationalBayesRouting,
SelfRouting) and UniformRouting: what each makes of the capsule contract,
and their argument checks. Their ops are tested against NumPy in
tests/ops/, their layers against the authors' code in
test_authors_outputs.py, and the shared checks (.keras, XLA, masks,
mixed precision) in tests/test_conformance.py."""

import numpy as np
from absl.testing import absltest

from keras_capsules import layers
from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, numpy
from tests.layers.test_dynamic_routing import as_contract


def _contract(seed, num_inputs=5, d_cov=2, d_in=3):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=(2, num_inputs)),
        rng.normal(size=(2, num_inputs, d_cov, d_in)),
    ]


def _flat_votes(layer, poses):
    votes = numpy(layer.capsule_votes(poses))  # (b, i, j, c, h)
    return votes.reshape(*votes.shape[:3], -1)


def _sigmoid(x):
    return 1 / (1 + np.exp(-numpy(x)))


class RoutingFamiliesTest(TestCase):
    def test_self_attention_logits_are_those_of_the_lengths(self):
        inputs = as_contract(np.random.default_rng(0).normal(size=(2, 6, 4)))
        layer = layers.SelfAttentionRouting(3, 5, dtype="float64")
        logits, capsules = layer(inputs)
        # The vectors u_i are the squashed inputs, so the votes are theirs.
        votes = _flat_votes(layer, np.asarray(inputs[1]))
        expected = capsule_ops.self_attention_routing(
            votes, numpy(layer.coupling_priors)
        )
        self.assertAllClose(numpy(capsules)[:, :, 0], expected, atol=1e-6)
        self.assertAllClose(
            _sigmoid(logits), np.linalg.norm(expected, axis=-1), atol=1e-6
        )

    def test_uniform_routing_is_one_iteration_of_dynamic_routing(self):
        inputs = as_contract(np.random.default_rng(1).normal(size=(2, 6, 4)))
        uniform = layers.UniformRouting(3, 5)
        dynamic = layers.DynamicRouting(3, 5, num_iterations=1)
        uniform(inputs)
        dynamic(inputs)
        dynamic.kernel.assign(uniform.kernel)
        self.assertAllClose(uniform(inputs), dynamic(inputs), atol=1e-6)

    def test_inverted_attention_reads_its_logits_from_its_poses(self):
        inputs = _contract(seed=2)
        layer = layers.InvertedAttentionRouting(3, 4, dtype="float64")
        logits, poses = layer(inputs)
        flat = numpy(poses).reshape(2, 3, 8)
        expected = flat @ numpy(layer.readout_kernel) + numpy(
            layer.readout_bias
        )
        self.assertAllClose(logits, expected, atol=1e-12)
        # The input logits play no part: the paper's capsules have none.
        other_logits, _ = layer([inputs[0] + 5.0, inputs[1]])
        self.assertAllClose(other_logits, logits, atol=0)
        # Layer-normalised poses: mean 0, variance ~1 (offset 0, scale 1).
        self.assertAllClose(flat.mean(axis=-1), np.zeros((2, 3)), atol=1e-12)

    def test_variational_bayes_routes_the_activations_of_the_logits(self):
        inputs = _contract(seed=3)
        layer = layers.VariationalBayesRouting(3, 4, dtype="float64")
        logits, poses = layer(inputs)
        expected = capsule_ops.variational_bayes_routing(
            _flat_votes(layer, inputs[1]),
            _sigmoid(inputs[0]),
            numpy(layer.beta_u),
            numpy(layer.beta_a),
        )
        self.assertAllClose(logits, expected[0], atol=1e-12)
        self.assertAllClose(
            numpy(poses).reshape(2, 3, 8), expected[1], atol=1e-12
        )

    def test_self_routing_with_shared_weights_takes_any_number_of_inputs(self):
        layer = layers.SelfRouting(3, 4, share_weights=True, dtype="float64")
        rng = np.random.default_rng(4)
        layer(_contract(seed=4))
        layer.routing_kernel.assign(rng.normal(size=(6, 3)))
        layer.routing_bias.assign(rng.normal(size=3))
        for num_inputs in (2, 7):
            inputs = _contract(seed=num_inputs, num_inputs=num_inputs)
            logits, poses = layer(inputs)
            flat_poses = np.asarray(inputs[1]).reshape(2, num_inputs, 6)
            routing_logits = flat_poses @ numpy(layer.routing_kernel) + numpy(
                layer.routing_bias
            )
            expected = capsule_ops.self_routing(
                _flat_votes(layer, inputs[1]), routing_logits, inputs[0]
            )
            self.assertAllClose(logits, expected[0], atol=1e-12)
            self.assertAllClose(
                numpy(poses).reshape(2, 3, 8), expected[1], atol=1e-12
            )

    def test_self_routing_activations_sum_to_one_over_the_parents(self):
        # sum_j a_j = sum_i a_i sum_j c_ij / sum_i a_i = 1.
        layer = layers.SelfRouting(4, 2, dtype="float64")
        layer(_contract(seed=6))
        layer.routing_bias.assign(np.random.default_rng(6).normal(size=(5, 4)))
        logits, _ = layer(_contract(seed=6))
        self.assertAllClose(_sigmoid(logits).sum(axis=-1), [1.0, 1.0])

    def test_bad_arguments_are_refused(self):
        for family in (
            layers.InvertedAttentionRouting,
            layers.VariationalBayesRouting,
        ):
            with self.assertRaisesRegex(ValueError, "num_iterations"):
                family(3, 4, num_iterations=0)
        for family in (
            layers.SelfAttentionRouting,
            layers.SelfRouting,
            layers.UniformRouting,
        ):
            with self.assertRaisesRegex(ValueError, "num_capsules"):
                family(0, 4)
            with self.assertRaisesRegex(ValueError, r"\(batch, n_in\)"):
                family(3, 4)([np.zeros((2, 5)), np.zeros((2, 5, 4))])


if __name__ == "__main__":
    absltest.main()
