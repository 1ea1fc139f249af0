"""Projection onto the principal directions of training data (Saul 3.1)."""

import numpy as np

from keras_capsules.ops.arguments import positive_int


class PrincipalProjection:
    """Maps inputs to their coordinates along the top principal directions.

    Saul (section 3.1) reduces 28x28 images to p = 196 inputs by the
    directions of largest variance of the training images.

    Args:
        num_components: int, the number of directions `p`.
        center: bool, whether to subtract the training mean before
            projecting (principal component scores). Defaults to True.

    Examples:

        >>> inputs = np.random.default_rng(0).normal(size=(50, 6))
        >>> projection = PrincipalProjection(num_components=2).fit(inputs)
        >>> projection.transform(inputs).shape
        (50, 2)
    """

    def __init__(self, num_components, center=True):
        self.num_components = positive_int(
            "PrincipalProjection", "num_components", num_components
        )
        self.center = center
        self.mean = None
        self.components = None

    def fit(self, inputs):
        """Finds the directions of `(n, ...)` training inputs; returns self."""
        x = np.reshape(np.asarray(inputs, np.float64), (len(inputs), -1))
        if self.num_components > x.shape[1]:
            raise ValueError(
                f"Cannot keep {self.num_components} directions of "
                f"{x.shape[1]}-dimensional inputs. Use num_components <= "
                f"{x.shape[1]}."
            )
        self.mean = x.mean(axis=0)
        centred = x - self.mean
        _, eigenvectors = np.linalg.eigh(centred.T @ centred)
        self.components = eigenvectors[:, ::-1][:, : self.num_components]
        return self

    def transform(self, inputs):
        """Returns float32 `(n, num_components)` projections."""
        if self.components is None:
            raise ValueError("Call `fit` before `transform`.")
        x = np.reshape(np.asarray(inputs, np.float64), (len(inputs), -1))
        if self.center:
            x = x - self.mean
        return (x @ self.components).astype(np.float32)
