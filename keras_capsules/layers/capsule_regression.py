"""The capsule regression layer (Saul, "Capsule regression", Figure 1)."""

import keras
import numpy as np
from keras import ops

from keras_capsules import ops as capsule_ops
from keras_capsules.layers import kernel_arguments, validation
from keras_capsules.ops import dtype_keeping
from keras_capsules.ops import labels as label_checks

# The smallest probability whose log `return_logits` gives: one that
# rounds to 0 keeps a finite logit.
_SMALLEST_PROBABILITY = 1e-30


@keras.saving.register_keras_serializable(package="keras_capsules")
class CapsuleRegression(keras.layers.Layer):
    """One capsule per class; classes compete by the lengths of their capsules.

    Each class i has a capsule `h_i ~ N(W_i x, I_d)` and
    `P(y = j | h) = |h_j|^2 / sum_i |h_i|^2` (eqs. 2-3). The layer returns the
    exact marginal `P(y | x)` of eq. 16, so it trains with `fit` and sparse
    categorical cross-entropy, or by the closed-form EM updates of
    `keras_capsules.trainers.CapsuleRegressionEM`.

    The paper's model has no offset and uses raw inputs. `use_offset=True`
    adds one (`W_i x + b_i`, as if x had an extra input equal to 1), and
    `center_inputs=True` subtracts a stored input mean that `adapt` sets.

    Args:
        num_classes: int, the number of classes and capsules `m` (>= 2).
        capsule_dim: int, the size `d` of each capsule.
        use_offset: bool, whether to add an offset `b_i`. Defaults to False.
        center_inputs: bool, whether to subtract the mean set by `adapt`.
            Defaults to False.
        kernel_initializer: initializer of the kernel `(p, m, d)`.
        kernel_regularizer: optional regularizer of the kernel.
        return_logits: bool, return `log P(y | x)` (class logits whose
            softmax is `P(y | x)`, as a head that takes
            `from_logits=True` losses; a probability that rounds to 0
            gives about -69) instead of `P(y | x)`. Defaults to False.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, p)` features.

    Returns:
        `(batch, m)` class probabilities `P(y | x)` (or their logs).

    Examples:

        >>> model = keras.Sequential([keras.Input((6,))])
        >>> model.add(CapsuleRegression(3, 2))
        >>> tuple(model(np.zeros((4, 6))).shape)
        (4, 3)
    """

    def __init__(
        self,
        num_classes,
        capsule_dim,
        use_offset=False,
        center_inputs=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        return_logits=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.return_logits = bool(return_logits)
        self.num_classes = num_classes
        self.capsule_dim = capsule_dim
        validation.check_positive_ints(self, ["num_classes", "capsule_dim"])
        validation.check_at_least(self, "num_classes", 2)
        self.use_offset = bool(use_offset)
        self.center_inputs = bool(center_inputs)
        kernel_arguments.set_kernel_arguments(
            self, kernel_initializer, kernel_regularizer
        )

    @classmethod
    def from_kernel(cls, kernel, input_mean=None, use_offset=False):
        """A built layer with the weights of one EM-trained model
        (`trainers.CapsuleRegressionEM`): `kernel` `(q, m, d)`, its last
        row the offset when `use_offset` (q = p + 1), and the inputs
        centred on `input_mean` `(p,)` when given."""
        kernel = np.asarray(kernel)
        p = kernel.shape[0] - int(use_offset)
        layer = cls(
            kernel.shape[1],
            kernel.shape[2],
            use_offset=use_offset,
            center_inputs=input_mean is not None,
        )
        layer.build((None, p))
        layer.kernel.assign(kernel[:p])
        if use_offset:
            layer.offset.assign(kernel[p])
        if input_mean is not None:
            layer.input_mean.assign(input_mean)
        return layer

    def build(self, input_shape):
        _, p = validation.feature_shape(self, input_shape)
        # A call with another number of features names both sizes.
        self.input_spec = keras.InputSpec(ndim=2, axes={-1: p})
        self.kernel = self.add_weight(  # W_i as columns: (p, m, d).
            name="kernel",
            shape=(p, self.num_classes, self.capsule_dim),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.offset = None
        if self.use_offset:
            self.offset = self.add_weight(
                name="offset",
                shape=(self.num_classes, self.capsule_dim),
                initializer="zeros",
            )
        self.input_mean = None
        if self.center_inputs:
            self.input_mean = self.add_weight(
                name="input_mean",
                shape=(p,),
                initializer="zeros",
                trainable=False,
            )

    def call(self, inputs):
        # Exact inference in float32: float16 loses the interpolation.
        means = ops.cast(self.prior_means(inputs), "float32")
        probabilities = capsule_ops.capsule_regression_probabilities(means)
        if self.return_logits:
            return ops.cast(
                ops.log(
                    dtype_keeping.maximum(probabilities, _SMALLEST_PROBABILITY)
                ),
                self.compute_dtype,
            )
        return ops.cast(probabilities, self.compute_dtype)

    def prior_means(self, inputs):
        """Returns the prior means `E[h_i | x] = W_i x`, `(batch, m, d)`."""
        inputs = ops.cast(inputs, self.compute_dtype)
        if not self.built:
            self.build(inputs.shape)
        if self.input_mean is not None:
            inputs = inputs - ops.cast(self.input_mean, self.compute_dtype)
        means = ops.einsum(
            "bp,pjd->bjd", inputs, ops.cast(self.kernel, self.compute_dtype)
        )
        if self.offset is not None:
            means = means + ops.cast(self.offset, self.compute_dtype)
        return means

    def posterior_means(self, inputs, labels):
        """Returns `E[h_i | x, y]` of eq. 19, `(batch, m, d)`, in float32;
        `labels` are class ids in `[0, num_classes)` (checked)."""
        labels = label_checks.class_ids(
            f"{self.name}.posterior_means", labels, self.num_classes
        )
        means = ops.cast(self.prior_means(inputs), "float32")
        return capsule_ops.capsule_regression_posterior_means(means, labels)

    def adapt(self, data):
        """Sets the stored input mean from training inputs.

        Args:
            data: a `(n, p)` array, or an iterable of batches (such as a
                `tf.data.Dataset`) of features or `(features, labels)`.
        """
        if not self.center_inputs:
            raise ValueError(
                f"`{self.name}.adapt` sets the input mean, which the layer "
                "uses only with `center_inputs=True`. Received "
                "center_inputs=False."
            )
        batches = [data] if hasattr(data, "shape") else data
        total, count = 0.0, 0
        for batch in batches:
            features = batch[0] if isinstance(batch, (tuple, list)) else batch
            features = np.asarray(features, dtype=np.float64)
            total = total + features.sum(axis=0)
            count += features.shape[0]
        if count == 0:
            raise ValueError(f"`{self.name}.adapt` received no examples.")
        if not self.built:
            self.build((None, int(np.shape(total)[-1])))
        self.input_mean.assign(total / count)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_classes)

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "capsule_dim": self.capsule_dim,
            "use_offset": self.use_offset,
            "center_inputs": self.center_inputs,
            **kernel_arguments.kernel_config(self),
            "return_logits": self.return_logits,
        }
