"""Figures people look at, written as PNG files."""

from keras_capsules.plots.generative_capsules import (
    plot_image_rows,
    plot_templates,
)
from keras_capsules.plots.latent_space import (
    plot_latent_space,
    squashed_latents,
)
from keras_capsules.plots.prototypes import plot_prototypes, prototype_indices
from keras_capsules.plots.reconstructions import (
    perturbation_grid,
    plot_capsule_perturbations,
    plot_reconstructions,
)
from keras_capsules.plots.routing_histograms import (
    plot_vote_distances,
    vote_distances,
)

__all__ = [
    "perturbation_grid",
    "plot_capsule_perturbations",
    "plot_image_rows",
    "plot_latent_space",
    "plot_prototypes",
    "plot_reconstructions",
    "plot_templates",
    "plot_vote_distances",
    "prototype_indices",
    "squashed_latents",
    "vote_distances",
]
