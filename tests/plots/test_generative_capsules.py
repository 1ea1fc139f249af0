"""Template and reconstruction figures are written as PNG files."""

import os
import tempfile

import numpy as np

from keras_capsules import layers, plots


def test_figures_are_written():
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2,
        num_template_capsules=5,
        template_size=4,
        image_shape=(8, 8, 1),
    )
    decoder.build()
    directory = tempfile.mkdtemp()
    plots.plot_templates(decoder, os.path.join(directory, "templates.png"))
    images = np.random.default_rng(0).uniform(size=(3, 8, 8, 1))
    plots.plot_image_rows(
        {"input": images, "decoded": images * 0.5},
        os.path.join(directory, "rows.png"),
    )
    for name in ("templates.png", "rows.png"):
        with open(os.path.join(directory, name), "rb") as file:
            assert file.read(8) == b"\x89PNG\r\n\x1a\n"
