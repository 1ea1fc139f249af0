"""Writes the `.keras` files in `e2935bd/`, which `test_saved_models.py`
loads.

Each file holds one small model, saved by the library at commit e2935bd
(before issue 59 gave every routing layer one form), with the outputs it
gave on fixed inputs: one model around each layer case of the
conformance table, and one of each model builder. The script is the
record of how they were made: it runs against that commit, and later
code need not run it. The point of the test is that files written then
still load and predict the same now.

Usage (at commit e2935bd): python -m tests.saved.make_e2935bd_models
"""

import os

import keras
import numpy as np

from keras_capsules import layers, models
from tests import test_conformance

DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2935bd")


def _images(rng, *shape):
    return rng.uniform(size=(2, *shape)).astype("float32")


def layer_cases():
    """`(name, model, inputs)` around each conformance layer case."""
    for case in test_conformance.LAYER_CASES:
        keras.utils.set_random_seed(0)
        inputs = case.make_inputs(batch=2, seed=1)
        yield case.name, case.make_model(), inputs


def model_cases():
    """`(name, model, inputs)` for each model builder, at small sizes."""
    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(0)
    yield (
        "capsnet",
        models.capsnet(
            (12, 12, 1),
            3,
            conv_filters=8,
            conv_kernel_size=3,
            primary_capsule_types=2,
            primary_capsule_dim=4,
            primary_kernel_size=3,
            capsule_dim=5,
            decoder_units=(6,),
        ),
        _images(rng, 12, 12, 1),
    )
    for routing in models.ROUTINGS:
        yield (
            f"capsule_classifier_{routing}",
            models.capsule_classifier(
                (12, 12, 1),
                3,
                routing=routing,
                backbone=models.default_backbone((12, 12, 1), (4, 6)),
                num_primary_types=2,
                capsule_dim=3,
            ),
            _images(rng, 12, 12, 1),
        )
    yield (
        "heinsen_image",
        models.heinsen_image(
            (12, 12, 1), 3, filters=4, num_parts=3, pose_shape=(2, 3)
        ),
        _images(rng, 12, 12, 1),
    )
    yield (
        "heinsen_sequence",
        models.heinsen_sequence(
            5, 3, num_depths=2, capsule_size=4, num_capsules=3
        ),
        [
            rng.normal(size=(2, 7, 2, 5)).astype("float32"),
            np.array([[1.0] * 7, [1.0] * 4 + [0.0] * 3], "float32"),
        ],
    )
    for recipe in models.MATRIX_CAPSNET_RECIPES:
        yield (
            f"matrix_capsnet_{recipe}",
            models.matrix_capsnet(4, 2, 3, 3, 3, (24, 24, 1), recipe=recipe),
            _images(rng, 24, 24, 1),
        )
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2,
        num_template_capsules=3,
        template_size=5,
        image_shape=(16, 16, 1),
    )
    decoder.build()
    autoencoder = models.GenerativeCapsuleAutoencoder(
        decoder,
        models.template_encoder((16, 16, 1), 3, channels=4),
        models.top_encoder(
            3,
            2,
            hidden_dim=8,
            num_blocks=1,
            num_inducing_points=2,
            num_heads=1,
            code_dim=4,
        ),
        seed=0,
    )
    autoencoder.build((None, 16, 16, 1))
    yield "generative_capsule_autoencoder", autoencoder, _images(rng, 16, 16, 1)
    vae = models.VariationalAutoencoder((8, 8, 1), 2, 6, seed=0)
    vae.build((None, 8, 8, 1))
    yield "variational_autoencoder", vae, _images(rng, 8, 8, 1)


def _as_list(values):
    return list(values) if isinstance(values, (list, tuple)) else [values]


def main():
    os.makedirs(DIRECTORY, exist_ok=True)
    for name, model, inputs in (*layer_cases(), *model_cases()):
        outputs = _as_list(model(inputs, training=False))
        model.save(os.path.join(DIRECTORY, f"{name}.keras"))
        np.savez(
            os.path.join(DIRECTORY, f"{name}.npz"),
            **{f"input_{k}": x for k, x in enumerate(_as_list(inputs))},
            **{f"output_{k}": np.asarray(y) for k, y in enumerate(outputs)},
        )
        print(name, [y.shape for y in outputs])


if __name__ == "__main__":
    main()
