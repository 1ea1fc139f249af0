"""The matrix-capsule layers: votes, routing, coordinate addition, masks."""

import importlib

import keras
import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import layers
from tests.every_backend import BACKEND, TestCase, numpy
from tests.ops.em_reference import em_reference
from tests.ops.test_conv_em_routing import dense_problem


def random_capsules(rng, grid, types):
    """`(activations, poses)` of two examples' capsules."""
    return (
        rng.uniform(0.05, 0.95, (2, *grid, types)).astype("float32"),
        rng.normal(size=(2, *grid, types, 4, 4)).astype("float32"),
    )


def logit(activations):
    return np.log(activations / (1 - activations)).astype("float32")


def sigmoid(logits):
    return 1 / (1 + np.exp(-np.asarray(logits, np.float64)))


class PrimaryMatrixCapsulesTest(TestCase):
    def test_poses_and_logits_come_from_the_two_convolutions(self):
        layer = layers.PrimaryMatrixCapsules(3, kernel_size=2)
        images = np.random.default_rng(0).normal(size=(2, 5, 4, 6))
        logits, poses = layer(images.astype("float32"))
        self.assertEqual(poses.shape, (2, 4, 3, 3, 4, 4))
        linear = layer.pose_convolution(images.astype("float32"))
        self.assertAllClose(
            poses, np.reshape(numpy(linear), (2, 4, 3, 3, 4, 4))
        )
        expected = layer.activation_convolution(images.astype("float32"))
        self.assertAllClose(logits, expected)

    def test_rejects_flat_inputs(self):
        with self.assertRaisesRegex(ValueError, r"\(batch, H, W, C\)"):
            layers.PrimaryMatrixCapsules(3)(np.zeros((2, 5), "float32"))


# `layers.EMRouting` fields and the reference's matching keywords; 18
# children per parent (3x3 kernel, 2 child types).
ACTIVATION_OPTIONS = (
    ("paper", {}, {}),
    (
        "per_child_gain_floor",
        {
            "cost_normalization": "per_child",
            "activation_bias_gain": 3.0,
            "variance_floor": 0.01,
        },
        {"cost_scale": 1 / 18, "bias_gain": 3.0, "variance_floor": 0.01},
    ),
    ("standardized", {"cost_normalization": "standardize"}, {}),
    (
        "per_mass_standardized",
        {"cost_normalization": "per_mass_standardize"},
        {"cost_per_mass": True},
    ),
    (
        "standardized_smoothed",
        {"cost_normalization": "standardize", "assignment_smoothing": 0.8},
        {"assignment_smoothing": 0.8},
    ),
)


class ConvMatrixCapsulesTest(TestCase):
    @parameterized.named_parameters(*ACTIVATION_OPTIONS)
    def test_matches_votes_and_routing_written_from_the_paper(
        self, layer_options, reference_options
    ):
        rng = np.random.default_rng(1)
        height, width, types_in, types_out, strides = 5, 5, 2, 3, 2
        lambdas = [0.5, 1.0, 1.5]
        layer = layers.ConvMatrixCapsules(
            types_out,
            3,
            strides=strides,
            routing=layers.EMRouting(
                num_iterations=3, final_inverse_temperature=1.5, **layer_options
            ),
        )
        if "standardize" in layer_options.get("cost_normalization", ""):
            reference_options = {
                **reference_options,
                "standardize_groups": np.repeat(np.arange(4), types_out),
            }
        activations, poses = random_capsules(rng, (height, width), types_in)
        layer.build([activations.shape, poses.shape])
        layer.beta_u.assign(rng.normal(scale=0.3, size=types_out))
        layer.beta_a.assign(rng.normal(scale=0.3, size=types_out))
        got_logits, got_poses = layer([logit(activations), poses])
        kernel = np.asarray(layer.kernel, np.float64)
        rows = (height - 3) // strides + 1
        votes = np.zeros((rows, rows, 3, 3, types_in, types_out, 16))
        for b in range(2):
            for y in range(rows):
                for x in range(rows):
                    for ky in range(3):
                        for kx in range(3):
                            for t in range(types_in):
                                for c in range(types_out):
                                    pose = poses[b, strides * y + ky]
                                    pose = pose[strides * x + kx, t]
                                    votes[y, x, ky, kx, t, c] = (
                                        pose @ kernel[ky, kx, t, c]
                                    ).ravel()
            incidence, dense = dense_problem(votes, height, width, strides)
            a, mu, _ = em_reference(
                dense,
                activations[b].reshape(-1).astype(np.float64),
                incidence,
                np.tile(numpy(layer.beta_u), rows * rows),
                np.tile(numpy(layer.beta_a), rows * rows),
                lambdas,
                **reference_options,
            )
            self.assertAllClose(
                sigmoid(numpy(got_logits)[b]),
                a.reshape(rows, rows, types_out),
                atol=1e-4,
            )
            self.assertAllClose(
                got_poses[b],
                mu.reshape(rows, rows, types_out, 4, 4),
                atol=1e-4,
                rtol=1e-4,
            )

    def test_same_padding_adds_inactive_children(self):
        rng = np.random.default_rng(2)
        activations, poses = random_capsules(rng, (4, 5), 2)
        same = layers.ConvMatrixCapsules(3, 3, strides=2, padding="same")
        valid = layers.ConvMatrixCapsules(3, 3, strides=2)
        out_same = same([logit(activations), poses])
        self.assertEqual(out_same[0].shape, (2, 2, 3, 3))
        valid.build([(2, 5, 7, 2), (2, 5, 7, 2, 4, 4)])
        valid.set_weights(same.get_weights())
        padding = [[0, 0], [0, 1], [1, 1], [0, 0]]  # total 1 and 2
        # Activation 0 around the grid: a logit of minus infinity.
        out_valid = valid(
            [
                np.pad(logit(activations), padding, constant_values=-1e9),
                np.pad(poses, padding + [[0, 0], [0, 0]]),
            ]
        )
        for got, want in zip(out_same, out_valid):
            self.assertAllClose(got, want, atol=1e-5)

    def test_masked_children_count_as_inactive(self):
        rng = np.random.default_rng(3)
        activations, poses = random_capsules(rng, (4, 4), 2)
        mask = rng.uniform(size=activations.shape) > 0.3
        layer = layers.ConvMatrixCapsules(2, 3)
        masked = layer([logit(activations), poses], mask=[mask, None])
        zeroed = layer([np.where(mask, logit(activations), -1e9), poses])
        for got, want in zip(masked, zeroed):
            self.assertAllClose(got, want)

    def test_rejects_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "num_iterations"):
            layers.EMRouting(num_iterations=0)
        with self.assertRaisesRegex(ValueError, "final_inverse_temperature"):
            layers.EMRouting(final_inverse_temperature=-1.0)
        with self.assertRaisesRegex(ValueError, "preset 'fast'.*paper"):
            layers.ConvMatrixCapsules(2, routing="fast")
        with self.assertRaisesRegex(ValueError, "at least 3x3"):
            layers.ConvMatrixCapsules(2, 3)(
                [np.ones((1, 2, 4, 2)), np.ones((1, 2, 4, 2, 4, 4))]
            )
        with self.assertRaisesRegex(ValueError, r"\[activations, poses\]"):
            layers.ConvMatrixCapsules(2, 3)(np.ones((1, 4, 4, 2, 4, 4)))
        with self.assertRaisesRegex(ValueError, "cost_normalization.*'z'"):
            layers.EMRouting(cost_normalization="z")
        for name in (
            "activation_bias_gain",
            "variance_floor",
            "assignment_smoothing",
        ):
            with self.assertRaisesRegex(ValueError, f"`{name}`.*-1"):
                layers.MatrixCapsuleEMRouting(2, routing={name: -1})
        with self.assertRaisesRegex(ValueError, "assignment_smoothing.*1"):
            layers.EMRouting(assignment_smoothing=1)

    def test_per_child_cost_needs_a_known_child_count(self):
        if BACKEND != "tensorflow":
            self.skipTest("Only TensorFlow traces grids of unknown size.")
        tf = importlib.import_module("tensorflow")
        layer = layers.MatrixCapsuleEMRouting(
            3, routing=layers.EMRouting(cost_normalization="per_child")
        )
        grid = tf.TensorSpec((None, None, None, 4))
        poses = tf.TensorSpec((None, None, None, 4, 4, 4))
        route = tf.function(lambda a, p: layer([a, p]), [grid, poses])
        with self.assertRaisesRegex(ValueError, "per_child.*known number"):
            route.get_concrete_function()

    def test_routing_settings_round_trip_through_the_config(self):
        routing = layers.EMRouting(
            num_iterations=2,
            schedule="geometric",
            activation_bias_gain=50.0,
            cost_normalization="standardize",
            variance_floor=5e-4,
            assignment_smoothing=0.8,
        )
        layer = layers.ConvMatrixCapsules(3, routing=routing)
        restored = layers.ConvMatrixCapsules.from_config(layer.get_config())
        self.assertEqual(restored.routing, routing)
        self.assertEqual(restored.num_iterations, 2)

    def test_configs_of_earlier_releases_load_their_routing(self):
        # The separate arguments of earlier releases, some left out (the
        # paper's defaults), an explicit schedule among them.
        config = layers.ConvMatrixCapsules(3).get_config()
        del config["routing"], config["contract"]
        config.update(
            num_iterations=2,
            inverse_temperatures=[0.05, 0.0975],
            cost_normalization="standardize",
        )
        layer = layers.ConvMatrixCapsules.from_config(config)
        self.assertEqual(
            layer.routing,
            layers.EMRouting(
                num_iterations=2,
                final_inverse_temperature=1.0,
                schedule="geometric",
                cost_normalization="standardize",
            ),
        )
        # Without the contract's marker: the former form, activations in.
        activations, poses = random_capsules(
            np.random.default_rng(7), (4, 4), 2
        )
        former, _ = layer([activations, poses])
        self.assertBetween(float(np.min(numpy(former))), 0.0, 1.0)


class MatrixCapsuleEMRoutingTest(TestCase):
    def test_coordinate_addition_offsets_the_right_hand_column(self):
        rng = np.random.default_rng(4)
        activations, poses = random_capsules(rng, (2, 3), 2)
        layer = layers.MatrixCapsuleEMRouting(4)
        layer([logit(activations), poses])
        with_coordinates = numpy(layer.votes(poses)).reshape(
            2, 2, 3, 2, 4, 4, 4
        )
        layer.coordinate_addition = False
        plain = numpy(layer.votes(poses)).reshape(2, 2, 3, 2, 4, 4, 4)
        offset = with_coordinates - plain
        for y in range(2):
            for x in range(3):
                expected = np.zeros((4, 4))
                expected[0, 3] = (y + 0.5) / 2
                expected[1, 3] = (x + 0.5) / 3
                self.assertAllClose(
                    offset[:, y, x], np.broadcast_to(expected, (2, 2, 4, 4, 4))
                )
        kernel = np.asarray(layer.kernel)
        self.assertAllClose(
            plain[1, 1, 2, 0, 3], poses[1, 1, 2, 0] @ kernel[0, 3], atol=1e-5
        )

    def test_takes_any_grid_size(self):
        rng = np.random.default_rng(5)
        layer = layers.MatrixCapsuleEMRouting(3)
        for grid in ((2, 2), (4, 3)):
            activations, poses = random_capsules(rng, grid, 5)
            logits, _ = layer([logit(activations), poses])
            self.assertEqual(logits.shape, (2, 3))

    def test_masked_capsules_change_nothing(self):
        rng = np.random.default_rng(6)
        activations, poses = random_capsules(rng, (7,), 3)
        activations, poses = activations[:, :, 0], poses[:, :, 0]
        layer = layers.MatrixCapsuleEMRouting(2)
        mask = np.ones((2, 7), bool)
        mask[:, 4:] = False
        garbage = poses.copy()
        garbage[:, 4:] = 1e3
        masked = layer([logit(activations), garbage], mask=[mask, mask])
        zeroed = layer([np.where(mask, logit(activations), -1e9), poses])
        for got, want in zip(masked, zeroed):
            self.assertAllClose(got, want, atol=1e-5)

    def test_list_inputs_need_a_known_count(self):
        with self.assertRaisesRegex(ValueError, "a known number of input"):
            layers.MatrixCapsuleEMRouting(2)(
                [keras.Input((None,)), keras.Input((None, 4, 4))]
            )


if __name__ == "__main__":
    absltest.main()
