"""The routing benchmarks' shapes (DESIGN.md section 9), apart from any
backend: each a layer, its inputs, its batch and the work the algorithm
needs (`bench.routing` relates them to the machine's limits;
`bench.backends` times them on every Keras backend)."""

from keras_capsules import layers


def _heinsen(n_in, d_cov, d_in, n_out, d_out, share_weights, batch):
    return {
        "layer": lambda: layers.HeinsenRouting(
            n_out, d_out, share_weights=share_weights
        ),
        "inputs": lambda rng: [
            rng.normal(size=(batch, n_in)),
            rng.normal(size=(batch, n_in, d_cov, d_in)),
        ],
        "batch": batch,
        "vote_macs": n_in * n_out * d_cov * d_in * d_out,
        "vote_elements": n_in * n_out * d_cov * d_out,
        "iterations": 3,
        "passes": 3,
    }


def _em(children_per_parent, parents, batch, layer, inputs):
    return {
        "layer": layer,
        "inputs": inputs,
        "batch": batch,
        "vote_macs": children_per_parent * parents * 16 * 4,
        "vote_elements": children_per_parent * parents * 16,
        "iterations": 3,
        "passes": 3,
    }


def _grid(batch, side, types):
    return lambda rng: [
        rng.normal(size=(batch, side, side, types)),
        rng.normal(size=(batch, side, side, types, 4, 4)),
    ]


SHAPES = {
    "heinsen_64_to_5_b20": _heinsen(64, 4, 4, 5, 4, False, 20),
    "heinsen_64_to_5_b128": _heinsen(64, 4, 4, 5, 4, False, 128),
    "heinsen_9216_to_64_b20": _heinsen(9216, 4, 4, 64, 4, True, 20),
    "heinsen_740_to_64_b20": _heinsen(740, 1, 64, 64, 2, True, 20),
    "dynamic_1152x8_to_10x16_b128": {
        "layer": lambda: layers.DynamicRouting(10, 16),
        "inputs": lambda rng: [
            rng.normal(size=(128, 1152)),
            rng.uniform(-0.3, 0.3, (128, 1152, 1, 8)),
        ],
        "batch": 128,
        "vote_macs": 1152 * 10 * 8 * 16,
        "vote_elements": 1152 * 10 * 16,
        "iterations": 3,
        "passes": 2,
    },
    # 16 types on 3x3 -> 10 classes, coordinate addition: 144 children.
    "em_class_16x3x3_to_10_b32": _em(
        144,
        10,
        32,
        lambda: layers.MatrixCapsuleEMRouting(10),
        _grid(32, 3, 16),
    ),
    # K=3, 8 -> 16 types, 6x6 -> 4x4: 16 positions x 16 parent types,
    # each with 72 children.
    "em_conv_k3_8_to_16_6x6_b32": _em(
        72,
        16 * 16,
        32,
        lambda: layers.ConvMatrixCapsules(16, 3, 1),
        _grid(32, 6, 8),
    ),
}


def _class_capsules(layer, iterations, passes):
    """Every family's class capsules at `models.capsule_classifier`'s
    shapes on 28x28 images: 7x7 positions of 8 primary types (392 4x4
    poses) -> 10 classes of 4x4, batch 32 (the comparison's)."""
    return {
        "layer": layer,
        "inputs": lambda rng: [
            rng.normal(size=(32, 392)),
            rng.normal(size=(32, 392, 4, 4)),
        ],
        "batch": 32,
        "vote_macs": 392 * 10 * 4 * 4 * 4,
        "vote_elements": 392 * 10 * 16,
        "iterations": iterations,
        "passes": passes,
    }


# One routing step of each family side by side (`--shapes=families_...`).
FAMILY_SHAPES = {
    "families_dynamic": _class_capsules(
        lambda: layers.DynamicRouting(10, 4), 3, 2
    ),
    "families_em": _class_capsules(
        lambda: layers.MatrixCapsuleEMRouting(10, 4), 3, 3
    ),
    "families_heinsen": _class_capsules(
        lambda: layers.HeinsenRouting(10, 4), 3, 3
    ),
    "families_self_attention": _class_capsules(
        lambda: layers.SelfAttentionRouting(10, 4), 1, 2
    ),
    "families_inverted_attention": _class_capsules(
        lambda: layers.InvertedAttentionRouting(10, 4), 2, 2
    ),
    "families_variational_bayes": _class_capsules(
        lambda: layers.VariationalBayesRouting(10, 4), 3, 3
    ),
    "families_self_routing": _class_capsules(
        lambda: layers.SelfRouting(10, 4), 1, 1
    ),
    "families_uniform": _class_capsules(
        lambda: layers.UniformRouting(10, 4), 1, 1
    ),
}
SHAPES.update(FAMILY_SHAPES)
