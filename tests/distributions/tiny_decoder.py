"""A small, seeded `GenerativeCapsuleDecoder` for the distribution tests."""

import keras

from keras_capsules import layers


def tiny_decoder(
    seed=0, num_top_capsules=3, num_template_capsules=5, **options
):
    """A built decoder of 4x4 templates on 8x8 images. Seeded: its random
    initial weights do not depend on the tests run before. `options` go to
    `GenerativeCapsuleDecoder`."""
    keras.utils.set_random_seed(seed)
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=num_top_capsules,
        num_template_capsules=num_template_capsules,
        template_size=4,
        image_shape=(8, 8, 1),
        **options,
    )
    decoder.build()
    return decoder
