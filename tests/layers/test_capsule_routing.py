"""The capsule contract: each routing family against its paper's own
form (the adapters of `layers.legacy`, which load files saved in it),
grids, and families that chain and swap."""

import keras
import numpy as np
from absl.testing import absltest, parameterized
from keras import ops

from keras_capsules import layers
from keras_capsules import ops as capsule_ops
from keras_capsules.layers import legacy
from tests.every_backend import TestCase, numpy


def _normal(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _same_weights(contract_layer, own_layer, contract_inputs, own_inputs):
    contract_layer(contract_inputs)
    own_layer(own_inputs)
    contract_layer.set_weights(own_layer.get_weights())


class CapsuleContractTest(TestCase):
    def test_dynamic_routing_of_squashed_vectors_is_its_own_form(self):
        vectors = capsule_ops.squash(_normal(0, 2, 6, 5))
        logits = capsule_ops.squashed_length_logit(vectors)
        own = legacy.FormerDynamicRouting(3, 4)
        contract = layers.DynamicRouting(3, 4)
        inputs = [logits, vectors[:, :, None]]
        _same_weights(contract, own, inputs, vectors)
        output_logits, poses = contract(inputs)
        capsules = own(vectors)
        self.assertAllClose(poses[:, :, 0], capsules, rtol=1e-5, atol=1e-6)
        self.assertAllClose(
            ops.sigmoid(output_logits),
            np.linalg.norm(numpy(capsules), axis=-1),
            rtol=1e-5,
        )

    def test_dynamic_routing_scales_poses_by_their_activation(self):
        # The same directions at any length, with logits: the same output.
        poses = _normal(1, 2, 6, 2, 3)
        logits = _normal(2, 2, 6)
        layer = layers.DynamicRouting(3, 4)
        first = layer([logits, poses])
        rescaled = layer([logits, poses * np.float32(7.0)])
        for got, want in zip(rescaled, first):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)

    def test_heinsen_routing_contract_is_its_own_form_without_variances(self):
        inputs = [_normal(3, 2, 5), _normal(4, 2, 5, 2, 3)]
        own = legacy.FormerHeinsenRouting(3, 2)
        contract = layers.HeinsenRouting(3, 2)
        _same_weights(contract, own, inputs, inputs)
        got = contract(inputs)
        self.assertLen(got, 2)
        for got_output, want_output in zip(got, own(inputs)[:2]):
            self.assertAllClose(got_output, want_output)

    def test_em_routing_contract_gives_the_logits_of_its_activations(self):
        activations = np.random.default_rng(5).uniform(0.05, 0.95, (2, 5))
        activations = activations.astype("float32")
        poses = _normal(6, 2, 5, 4, 4)
        logits = np.log(activations / (1 - activations))
        own = legacy.FormerMatrixCapsuleEMRouting(3)
        contract = layers.MatrixCapsuleEMRouting(3)
        _same_weights(contract, own, [logits, poses], [activations, poses])
        own.beta_a.assign([1.0, -1.0, 0.5])
        contract.beta_a.assign([1.0, -1.0, 0.5])
        output_logits, output_poses = contract([logits, poses])
        output_activations, own_poses = own([activations, poses])
        self.assertAllClose(
            ops.sigmoid(output_logits), output_activations, rtol=1e-5
        )
        self.assertAllClose(output_poses, own_poses, rtol=1e-5, atol=1e-5)

    def test_primary_capsules_contract_is_their_own_form(self):
        images = _normal(11, 2, 9, 9, 3)
        own = legacy.FormerPrimaryCapsules(4, 5, kernel_size=3)
        contract = layers.PrimaryCapsules(4, 5, kernel_size=3)
        _same_weights(contract, own, images, images)
        logits, poses = contract(images)
        capsules = own(images)
        self.assertAllClose(poses[:, :, 0], capsules)
        self.assertAllClose(
            ops.sigmoid(logits),
            np.linalg.norm(numpy(capsules), axis=-1),
            rtol=1e-5,
        )

    def test_primary_matrix_capsules_give_the_logits_on_the_grid(self):
        images = _normal(12, 2, 5, 4, 3)
        own = legacy.FormerPrimaryMatrixCapsules(3)
        listed = legacy.ListPrimaryMatrixCapsules(3)
        contract = layers.PrimaryMatrixCapsules(3)
        _same_weights(contract, own, images, images)
        _same_weights(listed, own, images, images)
        logits, poses = contract(images)
        activations, grid_poses = own(images)
        self.assertAllClose(ops.sigmoid(logits), activations, rtol=1e-6)
        self.assertAllClose(poses, grid_poses)
        list_logits, list_poses = listed(images)
        self.assertAllClose(list_logits, np.reshape(numpy(logits), (2, 60)))
        self.assertAllClose(list_poses, np.reshape(numpy(poses), (2, 60, 4, 4)))
        flat_logits, flat_poses = layers.FlattenCapsules()([logits, poses])
        self.assertAllClose(flat_logits, list_logits)
        self.assertAllClose(flat_poses, list_poses)

    def test_conv_matrix_capsules_route_the_activations_of_the_logits(self):
        activations = np.random.default_rng(13).uniform(0.05, 0.95, (2, 5, 5))
        activations = np.repeat(activations[..., None], 2, -1).astype("f4")
        logits = np.log(activations / (1 - activations))
        poses = _normal(14, 2, 5, 5, 2, 4, 4)
        own = legacy.FormerConvMatrixCapsules(3, 3, strides=2)
        contract = layers.ConvMatrixCapsules(3, 3, strides=2)
        _same_weights(contract, own, [logits, poses], [activations, poses])
        output_logits, output_poses = contract([logits, poses])
        output_activations, own_poses = own([activations, poses])
        self.assertAllClose(
            ops.sigmoid(output_logits), output_activations, rtol=1e-5
        )
        self.assertAllClose(output_poses, own_poses, rtol=1e-5, atol=1e-5)

    def test_a_grid_routes_as_the_list_of_its_capsules(self):
        logits, poses = _normal(15, 2, 2, 3, 4), _normal(16, 2, 2, 3, 4, 1, 5)
        on_grid = layers.DynamicRouting(3, 2)
        on_list = layers.DynamicRouting(3, 2)
        flat = layers.FlattenCapsules()([logits, poses])
        _same_weights(on_grid, on_list, [logits, poses], flat)
        for got, want in zip(on_grid([logits, poses]), on_list(flat)):
            self.assertAllClose(got, want, rtol=1e-6, atol=1e-6)

    @parameterized.named_parameters(
        ("dynamic", layers.DynamicRouting, {"capsule_dim": 4}),
        ("heinsen", layers.HeinsenRouting, {"capsule_dim": 4}),
        ("em", layers.MatrixCapsuleEMRouting, {}),
    )
    def test_families_swap_on_one_backbone_and_save(self, family, kwargs):
        logits = keras.Input((8,))
        poses = keras.Input((8, 4, 4))
        hidden = family(6, **kwargs)([logits, poses])
        outputs = layers.HeinsenRouting(3, 4)(hidden)
        model = keras.Model([logits, poses], outputs)
        inputs = [_normal(7, 2, 8), _normal(8, 2, 8, 4, 4)]
        output_logits, output_poses = model(inputs)
        self.assertEqual(tuple(output_logits.shape), (2, 3))
        self.assertEqual(tuple(output_poses.shape), (2, 3, 4, 4))
        path = self.create_tempfile(file_path="model.keras").full_path
        model.save(path)
        restored = keras.saving.load_model(path)
        for got, want in zip(restored(inputs), model(inputs)):
            self.assertAllClose(got, want, rtol=1e-6, atol=1e-6)

    @parameterized.named_parameters(
        ("dynamic", layers.DynamicRouting, "share_weights=True"),
        ("heinsen", layers.HeinsenRouting, "share_weights=True"),
    )
    def test_unknown_counts_name_the_shared_weights_option(self, family, hint):
        layer = family(3, 4)
        with self.assertRaisesRegex(ValueError, f"known number.*{hint}"):
            layer.build([(None, None), (None, None, 1, 4)])

    def test_vector_inputs_are_told_to_add_a_pose_axis(self):
        layer = layers.DynamicRouting(3, 4)
        with self.assertRaisesRegex(
            ValueError, r"\[logits, poses\].*Received.*poses\[:, :, None\]"
        ):
            layer.build([(None, 6), (None, 6, 5)])

    def test_shared_weights_take_any_count_with_a_mask(self):
        layer = layers.HeinsenRouting(3, 4, share_weights=True)
        logits, poses = _normal(9, 2, 7), _normal(10, 2, 7, 1, 4)
        mask = np.arange(7) < 4
        padded = layer([logits, poses], mask=np.stack([mask, mask]))
        cut = layer([logits[:, :4], poses[:, :4]])
        for got, want in zip(padded, cut):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    absltest.main()
