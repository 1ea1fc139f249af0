"""A training step that takes each batch's gradient in parts, each part
an XLA program of its own, so that a CPU runs the parts side by side."""

import keras
import tensorflow as tf

from keras_capsules.recipes import gradient_step


def part_bounds(batch_size, parts):
    """Where each of `parts` consecutive slices of a batch of `batch_size`
    examples starts and ends: `parts + 1` int32 scalars. The first `n mod
    parts` slices hold `n // parts + 1` examples and the rest `n // parts`
    (NumPy's `array_split`), so with fewer examples than parts the last
    slices are empty and the first never is."""
    batch_size = tf.cast(batch_size, tf.int32)
    size, larger = batch_size // parts, batch_size % parts
    return [k * size + tf.minimum(k, larger) for k in range(parts + 1)]


@keras.saving.register_keras_serializable(package="keras_capsules")
class BatchPartsModel(keras.Model):
    """`model`, trained with each batch's gradient taken in `parts` slices.

    TensorFlow's XLA on CPU runs the operations of one compiled program
    one after another, and most passes over capsule votes use one core
    (README, "Speed against the machine's limits"); two programs called
    from one step run side by side. Here each slice's forward pass, loss
    and gradient is one XLA program (when the model is compiled with
    `jit_compile=True`), and the step that joins them is a `tf.function`:
    the gradient is the slices' gradients weighted by their share of the
    batch, which is the whole batch's gradient for a loss that averages
    over the examples (Keras's default reduction) plus regularization
    losses. Metrics and the loss metric are those of the whole batch; loss
    scaling under `mixed_float16` is the optimizer's, as in Keras's step.
    On a GPU or TPU one program already fills the device: keep `parts=1`
    there.

    Layers that use batch statistics see each slice alone, as on the
    replicas of a `tf.distribute` strategy without synchronized batch
    normalization; state that a forward pass updates (moving statistics,
    random seeds) is updated by each slice in turn, in order, which makes
    the slices of such a model run one after another. Weights that only
    callbacks set (the EM layers' inverse temperatures) are read by all.

    Args:
        model: a Keras model (functional or sequential) whose `call` takes
            `training`.
        parts: int >= 1, slices of each training batch. Defaults to 2,
            one per core of a two-core CPU.
        **kwargs: base model arguments (`name`).

    Call arguments:
        inputs, training: as `model`'s.

    `get_layer` finds the wrapped model's layers; `.model` is the model.
    """

    def __init__(self, model, parts=2, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
            raise ValueError(
                "`BatchPartsModel` expects `parts` to be an int >= 1 (the "
                f"slices of each training batch). Received: parts={parts!r}."
            )
        self.model = model
        self.parts = parts
        self._part_gradients = None
        # A built functional model makes the wrapper built.
        self.built = model.built

    def call(self, inputs, training=None):
        return self.model(inputs, training=training)

    def get_layer(self, name=None, index=None):
        """A layer of the wrapped model (`model.get_layer`), so that code
        that looks layers up by name works on either."""
        return self.model.get_layer(name=name, index=index)

    def make_train_function(self, force=False):
        """Keras's training function, never compiled as one XLA program
        when `parts > 1`: the parts are the programs (`jit_compile`
        applies to them)."""
        if self.parts == 1 or (self.train_function is not None and not force):
            return super().make_train_function(force=force)
        self._part_gradients = self._gradients_of_part
        if not self.run_eagerly:
            self._part_gradients = tf.function(
                self._gradients_of_part,
                jit_compile=bool(self.jit_compile),
                reduce_retracing=True,
            )
        jit_compile = self.jit_compile
        self.jit_compile = False
        try:
            return super().make_train_function(force=force)
        finally:
            self.jit_compile = jit_compile

    def _gradients_of_part(self, inputs, labels, sample_weight, share):
        """One slice's predictions, loss (Keras's `compute_loss`: the mean
        over the slice plus regularization) and the gradient of `share`
        times the optimizer's scaled loss."""
        with tf.GradientTape() as tape:
            predictions = self(inputs, training=True)
            loss = self.compute_loss(
                inputs, labels, predictions, sample_weight, training=True
            )
            scaled = self.optimizer.scale_loss(
                loss * tf.cast(share, loss.dtype)
            )
        weights = self.trainable_weights
        gradients = tape.gradient(scaled, weights)
        gradients = [
            tf.zeros_like(weight) if gradient is None else gradient
            for weight, gradient in zip(weights, gradients)
        ]
        return predictions, loss, gradients

    def train_step(self, data):
        if self.parts == 1:
            return super().train_step(data)
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        batch_size = tf.shape(tf.nest.flatten(inputs)[0])[0]
        bounds = part_bounds(batch_size, self.parts)
        outputs = []
        for start, stop in zip(bounds[:-1], bounds[1:]):

            def run(start=start, stop=stop):
                share = (stop - start) / batch_size
                return self._part_gradients(
                    *_slices((inputs, labels, sample_weight), start, stop),
                    share,
                )

            # The first slice always holds an example; a later one may be
            # empty (a batch smaller than `parts`) and adds nothing.
            if outputs:
                outputs.append(
                    tf.cond(stop > start, run, lambda: _nothing(outputs[0]))
                )
            else:
                outputs.append(run())
        predictions = tf.nest.map_structure(
            lambda *parts: tf.concat(parts, axis=0),
            *[part[0] for part in outputs],
        )
        loss = 0.0
        for start, stop, (_, part_loss, _) in zip(
            bounds[:-1], bounds[1:], outputs
        ):
            loss += part_loss * tf.cast(stop - start, part_loss.dtype)
        loss /= tf.cast(batch_size, loss.dtype)
        gradients = [
            tf.add_n(list(parts))
            for parts in zip(*[part[2] for part in outputs])
        ]
        self.optimizer.apply(gradients, self.trainable_weights)
        gradient_step.update_loss_metric(self, loss, batch_size)
        return self.compute_metrics(inputs, labels, predictions, sample_weight)

    def get_config(self):
        return {
            "name": self.name,
            "model": keras.saving.serialize_keras_object(self.model),
            "parts": self.parts,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["model"] = keras.saving.deserialize_keras_object(
            config["model"], custom_objects=custom_objects
        )
        return cls(**config)


def _nothing(part):
    """What an empty slice gives, shaped as `part` (the first slice's
    predictions, loss and gradients): no predictions, zero loss and
    gradients."""
    predictions, loss, gradients = part
    return (
        tf.nest.map_structure(lambda t: t[:0], predictions),
        tf.zeros_like(loss),
        [tf.zeros_like(gradient) for gradient in gradients],
    )


def _slices(structure, start, stop):
    """`structure` (nested tensors, or None) sliced `[start:stop]` along
    the batch axis."""
    return tf.nest.map_structure(
        lambda t: None if t is None else t[start:stop], structure
    )
