"""Layers as earlier releases saved them, so that their `.keras` files
load and predict the same.

Before this release each routing and primary-capsule layer had two
forms: its paper's own (`contract=False`, the default; configs of the
oldest releases say nothing) and the capsule contract on lists of
capsules (`contract=True`). Now the contract, on lists or grids, is the
only form. `former_layer` turns a saved config into the layer that
computes what it computed: the layer itself where the former form
computes the same (the contract on lists), else one of the adapters
below, each the current layer with the former call. The adapters are
registered under names of their own, so a model loaded from an old file
saves and loads again; new code has no use for them.
"""

import keras
from keras import ops

from keras_capsules.layers import contract, validation
from keras_capsules.layers.conv_matrix_capsules import ConvMatrixCapsules
from keras_capsules.layers.dynamic_routing import DynamicRouting
from keras_capsules.layers.em_routing_settings import EMRouting
from keras_capsules.layers.heinsen_routing import HeinsenRouting
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.layers.matrix_capsule_em_routing import (
    MatrixCapsuleEMRouting,
)
from keras_capsules.layers.primary_capsules import PrimaryCapsules
from keras_capsules.layers.primary_matrix_capsules import (
    PrimaryMatrixCapsules,
)

# The EM layers' separate routing arguments of earlier releases, now the
# fields of one `EMRouting`.
_EM_ROUTING_ARGUMENTS = (
    "num_iterations",
    "inverse_temperatures",
    "activation_bias_gain",
    "cost_normalization",
    "variance_floor",
    "assignment_smoothing",
)


def _current_arguments(cls, config):
    """`config` of a `cls` with the arguments of earlier releases under
    their current names: Heinsen's `num_inputs="variable"` is
    `share_weights=True`, the EM layers' routing arguments one
    `routing`."""
    config = dict(config)
    if "num_inputs" in config:
        config["share_weights"] = config.pop("num_inputs") == "variable"
    if issubclass(cls, (MatrixCapsuleEMRouting, ConvMatrixCapsules)):
        fields = {
            name: config.pop(name)
            for name in _EM_ROUTING_ARGUMENTS
            if name in config
        }
        config["routing"] = EMRouting.from_former_arguments(**fields)
    return config


def _adapter(cls):
    """Registers adapter `cls` with Keras under its own name, and gives it
    the name of the layer it adapts: a `.keras` file keys each layer's
    weights by its class name, and the file was written by that layer."""
    cls = keras.saving.register_keras_serializable(
        package="keras_capsules", name=cls.__name__
    )(cls)
    cls.__name__ = cls.__mro__[2].__name__
    return cls


class _Former:
    """What every adapter shares: a config without the contract's marker,
    loaded as it is."""

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        config = super().get_config()
        config.pop("contract")
        return config


@_adapter
class FormerDynamicRouting(_Former, DynamicRouting):
    """`DynamicRouting`'s own form: vectors `(batch, n_in, d_in)` in,
    vectors `(batch, n_out, d_out)` out, routed as they come."""

    def build(self, input_shape):
        _, count, dim = validation.capsule_shape(
            self, input_shape, allow_unknown_count=self.share_weights
        )
        batch = input_shape[0]
        super().build([(batch, count), (batch, count, 1, dim)])
        self.input_spec = None

    def call(self, inputs, mask=None):
        vectors = ops.cast(inputs, self.compute_dtype)[:, :, None, :]
        _, capsules = self._route(None, vectors, combined_input_mask(mask))
        return ops.cast(capsules[:, :, 0, :], self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_capsules, self.capsule_dim)


@_adapter
class FormerHeinsenRouting(_Former, HeinsenRouting):
    """`HeinsenRouting`'s own form: the contract's inputs, and the
    outputs' variances as a third output."""

    def call(self, inputs, mask=None):
        return self._route_contract_inputs(inputs, mask)

    def compute_output_shape(self, input_shape):
        scores, capsules = super().compute_output_shape(input_shape)
        return [scores, capsules, capsules]

    def compute_mask(self, inputs, mask=None):
        masks = super().compute_mask(inputs, mask)
        return None if masks is None else masks + masks[:1]


@_adapter
class FormerMatrixCapsuleEMRouting(_Former, MatrixCapsuleEMRouting):
    """`MatrixCapsuleEMRouting`'s own form: activations in `[0, 1]` (not
    logits) in and out."""

    def call(self, inputs, mask=None):
        activations, poses = inputs
        logits, means, _ = self._route_activations(
            activations, poses, combined_input_mask(mask)
        )
        return [
            ops.cast(ops.sigmoid(logits), self.compute_dtype),
            ops.cast(means, self.compute_dtype),
        ]


@_adapter
class FormerConvMatrixCapsules(_Former, ConvMatrixCapsules):
    """`ConvMatrixCapsules`' own form: activations in `[0, 1]` (not
    logits) in and out."""

    def call(self, inputs, mask=None):
        activations, poses = inputs
        return self._route(
            ops.cast(activations, "float32"),
            poses,
            combined_input_mask(mask),
            return_logits=False,
        )


@_adapter
class FormerPrimaryCapsules(_Former, PrimaryCapsules):
    """`PrimaryCapsules`' own form: the squashed vectors `(batch, n, d)`."""

    def call(self, inputs):
        _, capsules = super().call(inputs)
        return capsules[:, :, 0, :]

    def compute_output_shape(self, input_shape):
        _, shape = super().compute_output_shape(input_shape)
        return (*shape[:2], shape[-1])


@_adapter
class FormerPrimaryMatrixCapsules(_Former, PrimaryMatrixCapsules):
    """`PrimaryMatrixCapsules`' own form: activations in `(0, 1)`, not
    logits, on the grid."""

    def call(self, inputs):
        logits, poses = super().call(inputs)
        return [ops.sigmoid(logits), poses]


@_adapter
class ListPrimaryMatrixCapsules(_Former, PrimaryMatrixCapsules):
    """`PrimaryMatrixCapsules` in the first form of the contract: the grid
    as a list of `H' W' B` capsules (by row, column, type)."""

    def call(self, inputs):
        logits, poses, _ = contract.as_list(*super().call(inputs), None)
        return [logits, poses]

    def compute_output_shape(self, input_shape):
        grid, _ = super().compute_output_shape(input_shape)
        count = None if None in grid[1:] else grid[1] * grid[2] * grid[3]
        return [(grid[0], count), (grid[0], count, 4, 4)]


# The adapter of each layer's own form, and of its first contract form
# where that computed otherwise than the layer does now.
_OWN_FORMS = {
    "DynamicRouting": FormerDynamicRouting,
    "HeinsenRouting": FormerHeinsenRouting,
    "MatrixCapsuleEMRouting": FormerMatrixCapsuleEMRouting,
    "ConvMatrixCapsules": FormerConvMatrixCapsules,
    "PrimaryCapsules": FormerPrimaryCapsules,
    "PrimaryMatrixCapsules": FormerPrimaryMatrixCapsules,
}
_FIRST_CONTRACT_FORMS = {"PrimaryMatrixCapsules": ListPrimaryMatrixCapsules}


def former_layer(cls, config, speaks_contract):
    """The layer that computes what `cls` saved as `config` computed: in
    the first form of the contract (`speaks_contract`) or in its own."""
    config = _current_arguments(cls, config)
    forms = _FIRST_CONTRACT_FORMS if speaks_contract else _OWN_FORMS
    return forms.get(cls.__name__, cls)(**config)
