"""Every public layer through the shared checks, from one table of cases."""

import importlib
import inspect
import itertools

from absl.testing import absltest, parameterized

from keras_capsules import layers
from tests import conformance
from tests.every_backend import BACKEND, TestCase


def _decoder_log_joint(layer, inputs, outputs):
    """`log p(t^0, A^0, t^1, A^1, X)` of the decoder's generative model at
    the input template capsules (rounded to binary presences), all top
    capsules on at the identity pose and the rendered image: reaches every
    generative parameter."""
    tf = importlib.import_module("tensorflow")
    presences, poses = (tf.cast(x, "float32") for x in inputs)
    batch = tf.shape(presences)[0]
    top = {
        "presence": tf.ones((batch, layer.num_top_capsules)),
        "pose": tf.zeros((batch, layer.num_top_capsules, 6)),
    }
    templates = {"presence": tf.round(presences), "pose": poses}
    model = layer.generative_model(relaxed=False)
    return tf.reduce_sum(
        model.log_joint(tf.cast(outputs, "float32"), top, templates)
    )


LAYER_CASES = [
    conformance.LayerCase(
        layers.CapsuleRegression,
        {"num_classes": 4, "capsule_dim": 3},
        (7,),
        "capsule_regression",
    ),
    conformance.LayerCase(
        layers.CapsuleRegression,
        {
            "num_classes": 2,
            "capsule_dim": 1,
            "use_offset": True,
            "center_inputs": True,
        },
        (5,),
        "capsule_regression_offset_centred",
    ),
    conformance.LayerCase(
        layers.PrimaryCapsules,
        {"num_capsule_types": 3, "capsule_dim": 4, "kernel_size": 3},
        (7, 7, 2),
        "primary_capsules",
    ),
    conformance.LayerCase(
        layers.PrimaryCapsules,
        {
            "num_capsule_types": 3,
            "capsule_dim": 4,
            "kernel_size": 5,
            "padding": "same",
            "convolution_algorithm": "spectral",
        },
        (7, 6, 2),
        "primary_capsules_spectral",
    ),
    conformance.LayerCase(
        layers.DynamicRouting,
        {"num_capsules": 3, "capsule_dim": 4},
        [(6,), (6, 1, 5)],
        "dynamic_routing",
        mask_shape=(6,),
    ),
    conformance.LayerCase(
        layers.DynamicRouting,
        {"num_capsules": 2, "capsule_dim": 3, "share_weights": True},
        [(6,), (6, 2, 5)],
        "dynamic_routing_shared",
        mask_shape=(6,),
    ),
    conformance.LayerCase(
        layers.DynamicRouting,
        {"num_capsules": 3, "capsule_dim": 2, "num_iterations": 2},
        [(2, 2, 3), (2, 2, 3, 1, 4)],
        "dynamic_routing_grid",
        mask_shape=(2, 2, 3),
    ),
    conformance.LayerCase(
        layers.HeinsenRouting,
        {"num_capsules": 3, "capsule_dim": 2},
        [(5,), (5, 2, 3)],
        "heinsen_routing",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.HeinsenRouting,
        {
            "num_capsules": 3,
            "capsule_dim": 2,
            "share_weights": True,
            "tie_betas": True,
        },
        [(5,), (5, 2, 3)],
        "heinsen_routing_shared",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.HeinsenRouting,
        {"num_capsules": None, "capsule_dim": 2},
        [(5,), (5, 2, 3)],
        "heinsen_routing_variable_outputs",
        # float32's own error on its outputs (scale ~2) reached 1.3e-6
        # against float64 on an AVX2 CPU, above the default atol of 1e-6
        # between XLA and eager mode.
        graph_tolerance=1e-5,
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.MatrixCapsuleEMRouting,
        {"num_capsules": 2, "capsule_dim": 3},
        [(5,), (5, 2, 4)],
        "matrix_capsule_em_routing_list",
        graph_tolerance=1e-4,
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.MatrixCapsuleEMRouting,
        {"num_capsules": 3, "routing": {"num_iterations": 2}},
        [(2, 3, 4), (2, 3, 4, 4, 4)],
        "matrix_capsule_em_routing_grid",
        mask_shape=(2, 3, 4),
        graph_tolerance=1e-4,
    ),
    conformance.LayerCase(
        layers.SelfAttentionRouting,
        {"num_capsules": 3, "capsule_dim": 4},
        [(6,), (6, 1, 5)],
        "self_attention_routing",
        mask_shape=(6,),
    ),
    conformance.LayerCase(
        layers.InvertedAttentionRouting,
        {"num_capsules": 3, "capsule_dim": 2},
        [(5,), (5, 2, 3)],
        "inverted_attention_routing",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.VariationalBayesRouting,
        {"num_capsules": 3, "capsule_dim": 2},
        [(5,), (5, 2, 3)],
        "variational_bayes_routing",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.SelfRouting,
        {"num_capsules": 3, "capsule_dim": 2},
        [(5,), (5, 2, 3)],
        "self_routing",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.SelfRouting,
        {"num_capsules": 2, "capsule_dim": 3, "share_weights": True},
        [(5,), (5, 2, 3)],
        "self_routing_shared",
        mask_shape=(5,),
    ),
    conformance.LayerCase(
        layers.UniformRouting,
        {"num_capsules": 3, "capsule_dim": 4, "share_weights": True},
        [(6,), (6, 1, 5)],
        "uniform_routing_shared",
        mask_shape=(6,),
    ),
    conformance.LayerCase(
        layers.EfficientPrimaryCapsules,
        {"capsule_dim": 4, "kernel_size": 3},
        (5, 5, 8),
        "efficient_primary_capsules",
    ),
    conformance.LayerCase(
        layers.PrimaryMatrixCapsules,
        {"num_capsule_types": 3, "kernel_size": 2},
        (5, 4, 2),
        "primary_matrix_capsules",
    ),
    conformance.LayerCase(
        layers.ConvMatrixCapsules,
        {"num_capsule_types": 3, "kernel_size": 3, "strides": 2},
        [(5, 5, 2), (5, 5, 2, 4, 4)],
        "conv_matrix_capsules",
        mask_shape=(5, 5, 2),
        graph_tolerance=1e-4,
    ),
    conformance.LayerCase(
        layers.ConvMatrixCapsules,
        {
            "num_capsule_types": 3,
            "kernel_size": 2,
            "padding": "same",
            "routing": "standardized",
        },
        [(3, 4, 2), (3, 4, 2, 4, 4)],
        "conv_matrix_capsules_same",
        mask_shape=(3, 4, 2),
        graph_tolerance=1e-4,
    ),
    conformance.LayerCase(
        layers.FlattenCapsules,
        {},
        [(2, 3, 4), (2, 3, 4, 4, 4)],
        "flatten_capsules",
        mask_shape=(2, 3, 4),
    ),
    conformance.LayerCase(
        layers.CoordinateChannels, {}, (5, 4, 2), "coordinate_channels"
    ),
    conformance.LayerCase(
        layers.DepthEmbedding, {}, (6, 3, 4), "depth_embedding"
    ),
    conformance.LayerCase(
        layers.PresenceScores, {"repeats": 3}, (5,), "presence_scores"
    ),
    conformance.LayerCase(layers.CapsuleLength, {}, (4, 3), "capsule_length"),
    conformance.LayerCase(layers.CapsuleMask, {}, (4, 3), "capsule_mask"),
    conformance.LayerCase(
        layers.AttentivePooling,
        {"num_capsules": 3, "capsule_dim": 4},
        (5, 6, 2),
        "attentive_pooling",
    ),
    conformance.LayerCase(
        layers.CapsuleEmbedding, {}, (4, 3), "capsule_embedding"
    ),
    conformance.LayerCase(
        layers.InducedSetAttention,
        {"num_inducing_points": 3, "num_heads": 2},
        (5, 4),
        "induced_set_attention",
        mask_shape=(5,),
        float16_compiles_on_jax_cpu=False,
    ),
    conformance.LayerCase(
        layers.PoolingByMultiheadAttention,
        {"num_seeds": 2, "num_heads": 2},
        (5, 4),
        "pooling_by_multihead_attention",
        mask_shape=(5,),
        float16_compiles_on_jax_cpu=False,
    ),
    conformance.LayerCase(
        layers.GenerativeCapsuleDecoder,
        {
            "num_top_capsules": 2,
            "num_template_capsules": 3,
            "template_size": 4,
            "image_shape": (8, 7, 1),
        },
        [(3,), (3, 6)],
        "generative_capsule_decoder",
        probability_inputs=(0,),
        extra_loss=_decoder_log_joint,
        # Its generative model is a TensorFlow Probability distribution.
        backends=("tensorflow",),
    ),
]


# Exported names that are not layers to run on their own.
NOT_IN_THE_TABLE = {
    "CapsuleRouting": "the abstract base; its families are in the table",
    "EMRouting": "the EM layers' settings, not a layer",
}


class ConformanceTest(TestCase):
    @parameterized.named_parameters(
        (f"{case.name}_{check}", case, check)
        for case, check in itertools.product(LAYER_CASES, conformance.CHECKS)
    )
    def test_layer(self, case, check):
        if BACKEND not in case.backends:
            self.skipTest(f"{case.name} runs on {case.backends} only.")
        conformance.CHECKS[check](self, case)

    def test_every_exported_layer_is_in_the_table(self):
        tested = {case.cls.__name__ for case in LAYER_CASES}
        self.assertEqual(set(layers.__all__) - set(NOT_IN_THE_TABLE), tested)

    def test_every_layer_that_takes_masks_is_checked_with_one(self):
        for case in LAYER_CASES:
            takes_masks = "mask" in inspect.signature(case.cls.call).parameters
            self.assertEqual(
                case.mask_shape is not None, takes_masks, msg=case.name
            )


if __name__ == "__main__":
    absltest.main()
