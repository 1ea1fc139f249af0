"""Figures people look at, written as PNG files."""

from keras_capsules.plots.latent_space import (
    plot_latent_space,
    squashed_latents,
)
from keras_capsules.plots.prototypes import plot_prototypes, prototype_indices

__all__ = [
    "plot_latent_space",
    "plot_prototypes",
    "prototype_indices",
    "squashed_latents",
]
