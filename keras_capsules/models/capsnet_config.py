"""The sizes and training settings of `CapsNet`, one frozen object, with
named presets."""

import dataclasses

from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.settings import Settings

_CONVOLUTION_ALGORITHMS = ("auto", "direct", "spectral")


@dataclasses.dataclass(frozen=True)
class CapsNetConfig(Settings):
    """CapsNet's settings (Sabour, Frosst, Hinton 2017, sec. 4). The
    defaults are the paper's (`PRESETS["paper"]`, 8.2M weights at 28x28).

    Args:
        conv_filters: int, channels of the first convolution (256).
        conv_kernel_size: int, its window (9).
        primary_capsule_types: int, `PrimaryCapsules` types per position
            (32).
        primary_capsule_dim: int, size of each primary capsule (8).
        primary_kernel_size: int, the primary convolution's window (9).
        primary_strides: int, the primary convolution's strides (2).
        convolution_algorithm: the primary capsules' convolution
            (`PrimaryCapsules`' `convolution_algorithm`): `"auto"`
            (spectral on a CPU at the paper's sizes), `"direct"` or
            `"spectral"`; the weights are the same.
        capsule_dim: int, size of each class capsule (16).
        num_iterations: int, routing iterations (3).
        decoder_units: hidden layer sizes of the decoder ((512, 1024)).
        reconstruction_weight: float, the reconstruction loss's weight
            (0.0005); 0 trains without the decoder's loss.

    Examples:

        >>> small = CapsNetConfig.preset("small")
        >>> small.conv_filters, small.primary_capsule_types
        (64, 8)
        >>> small.replace(num_iterations=2).num_iterations
        2
    """

    KIND = "CapsNet"

    conv_filters: int = 256
    conv_kernel_size: int = 9
    primary_capsule_types: int = 32
    primary_capsule_dim: int = 8
    primary_kernel_size: int = 9
    primary_strides: int = 2
    convolution_algorithm: str = "auto"
    capsule_dim: int = 16
    num_iterations: int = 3
    decoder_units: tuple = (512, 1024)
    reconstruction_weight: float = 0.0005

    def __post_init__(self):
        self._check_positive_ints(
            *(f.name for f in dataclasses.fields(self) if f.type is int)
        )
        units = tuple(
            positive_int("CapsNetConfig", "decoder_units", units)
            for units in self.decoder_units
        )
        object.__setattr__(self, "decoder_units", units)
        self._check_options(convolution_algorithm=_CONVOLUTION_ALGORITHMS)
        if not float(self.reconstruction_weight) >= 0:
            raise ValueError(
                "`CapsNetConfig` expects `reconstruction_weight` >= 0 (0: no "
                f"decoder loss). Received: {self.reconstruction_weight!r}."
            )

    def get_config(self):
        """The settings as a dict of plain values."""
        config = dataclasses.asdict(self)
        return {**config, "decoder_units": list(self.decoder_units)}


PRESETS = {
    # The paper's model: 8.2M weights at 28x28 (conv 20,992, primary
    # capsules 5,308,672, routing 1,474,560, decoder 1,411,344).
    "paper": CapsNetConfig(),
    # The demo's model for the procedural shapes on 2 CPU cores: 64 conv
    # channels, 8 primary capsule types, a decoder of 256 and 512 units.
    "small": CapsNetConfig(
        conv_filters=64, primary_capsule_types=8, decoder_units=(256, 512)
    ),
}
CapsNetConfig.PRESETS = PRESETS
