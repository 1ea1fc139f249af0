"""Training, evaluation and prediction steps that take each batch in
parts, each part an XLA program of its own, so that a CPU runs the parts
side by side."""

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


# Each step's program for one slice (`BatchPartsModel._made_in_parts`).
_PART_FUNCTIONS = {
    "train": "_gradients_of_part",
    "test": "_loss_of_part",
    "predict": "_predictions_of_part",
}


@keras.saving.register_keras_serializable(package="keras_capsules")
class BatchPartsModel(keras.Model):
    """`model`, trained, evaluated and run on each batch in `parts` slices.

    TensorFlow's XLA on CPU runs the operations of one compiled program
    one after another, and most passes over capsule votes use one core
    (research/speed.md); two programs called
    from one step run side by side. Here each slice's forward pass, loss
    and gradient is one XLA program (when the model is compiled with
    `jit_compile=True`), and the step that joins them is a `tf.function`:
    the gradient is the slices' gradients weighted by their share of the
    batch, which is the whole batch's gradient for a loss that averages
    over the examples (Keras's default reduction) plus regularization
    losses. Metrics and the loss metric are those of the whole batch; loss
    scaling under `mixed_float16` is the optimizer's, as in Keras's step.
    `evaluate` and `predict` take their batches in slices the same way
    (each slice's forward pass and loss one program); calling the model
    (`model(x)`, a SavedModel's signature) runs `model` whole. Under a
    `tf.distribute` strategy each replica takes its own rows of the batch
    in `parts` slices, and the replicas' gradients are summed as in
    Keras's step. On a GPU or TPU one program already fills the device:
    keep `parts=1` there.

    Layers that use batch statistics see each slice alone, as on the
    replicas of a `tf.distribute` strategy without synchronized batch
    normalization; state that a forward pass updates (moving statistics,
    random seeds) is updated by each slice in turn, in order, which makes
    the slices of such a model run one after another. Weights that only
    callbacks set (the EM layers' inverse temperatures) are read by all.

    Args:
        model: a Keras model (functional or sequential) whose `call` takes
            `training`.
        parts: int >= 1, slices of each batch. Defaults to 2, one per
            core of a two-core CPU.
        **kwargs: base model arguments (`name`).

    Call arguments:
        inputs, training: as `model`'s.

    `get_layer` finds the wrapped model's layers; `.model` is the model.

    Examples:

        >>> inputs = keras.Input((4,))
        >>> model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        >>> sliced = BatchPartsModel(model, parts=2)
        >>> sliced.compile("sgd", "mse")
        >>> history = sliced.fit(np.ones((8, 4)), np.zeros((8, 2)), verbose=0)
        >>> tuple(sliced.predict(np.ones((3, 4)), verbose=0).shape)
        (3, 2)
    """

    def __init__(self, model, parts=2, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
            raise ValueError(
                "`BatchPartsModel` expects `parts` to be an int >= 1 (the "
                f"slices of each batch). Received: parts={parts!r}."
            )
        self.model = model
        self.parts = parts
        self._train_program = None
        self._test_program = None
        self._predict_program = None
        # A built functional model makes the wrapper built.
        self.built = model.built

    def call(self, inputs, training=None):
        return self.model(inputs, training=training)

    def get_layer(self, name=None, index=None):
        """A layer of the wrapped model (`model.get_layer`), so that code
        that looks layers up by name works on either."""
        return self.model.get_layer(name=name, index=index)

    def make_train_function(self, force=False):
        return self._made_in_parts(super().make_train_function, "train", force)

    def make_test_function(self, force=False):
        return self._made_in_parts(super().make_test_function, "test", force)

    def make_predict_function(self, force=False):
        return self._made_in_parts(
            super().make_predict_function, "predict", force
        )

    def _made_in_parts(self, make, step, force):
        """Keras's function for `step` ("train", "test", "predict"; made
        by `make(force=force)`), which with more than one part is never
        compiled as one XLA program itself: each slice's program,
        `self._{step}_program`, is made here, compiled as the model is
        (`jit_compile`)."""
        if self.parts == 1 or (
            getattr(self, f"{step}_function") is not None and not force
        ):
            return make(force=force)
        program = getattr(self, _PART_FUNCTIONS[step])
        if not self.run_eagerly:
            program = tf.function(
                program,
                jit_compile=bool(self.jit_compile),
                reduce_retracing=True,
            )
        setattr(self, f"_{step}_program", program)
        jit_compile = self.jit_compile
        self.jit_compile = False
        try:
            return make(force=force)
        finally:
            self.jit_compile = jit_compile

    def _gradients_of_part(self, inputs, labels, sample_weight):
        """One slice's predictions, loss (Keras's `compute_loss`: the mean
        over the slice plus regularization) and the loss's gradient,
        scaled as the optimizer scales losses."""
        with tf.GradientTape() as tape:
            predictions = self(inputs, training=True)
            loss = self.compute_loss(
                inputs, labels, predictions, sample_weight, training=True
            )
            scaled = self.optimizer.scale_loss(loss)
        weights = self.trainable_weights
        gradients = tape.gradient(scaled, weights)
        gradients = [
            tf.zeros_like(weight) if gradient is None else gradient
            for weight, gradient in zip(weights, gradients)
        ]
        return predictions, loss, gradients

    def _loss_of_part(self, inputs, labels, sample_weight):
        """One slice's predictions and loss, as Keras evaluates them."""
        predictions = self(inputs, training=False)
        loss = self.compute_loss(
            inputs, labels, predictions, sample_weight, training=False
        )
        return predictions, loss

    def _predictions_of_part(self, inputs):
        return (self(inputs, training=False),)

    def _in_parts(self, part_program, data):
        """`part_program` on each slice of `data` (a tuple of nested
        tensors or None, the batch first): the joined predictions (each
        program's first output), the rest of each program's outputs, each
        slice's share of the batch, and the batch size."""
        batch_size = tf.shape(tf.nest.flatten(data[0])[0])[0]
        bounds = part_bounds(batch_size, self.parts)
        outputs, shares = [], []
        for start, stop in zip(bounds[:-1], bounds[1:]):

            def run(start=start, stop=stop):
                return part_program(*_slices(data, start, stop))

            # The first slice always holds an example; a later one may be
            # empty (a batch smaller than `parts`) and adds nothing.
            if outputs:
                outputs.append(
                    tf.cond(stop > start, run, lambda: _nothing(outputs[0]))
                )
            else:
                outputs.append(run())
            shares.append((stop - start) / batch_size)
        predictions = tf.nest.map_structure(
            lambda *parts: tf.concat(parts, axis=0),
            *[output[0] for output in outputs],
        )
        rest = [output[1:] for output in outputs]
        return predictions, rest, shares, batch_size

    def train_step(self, data):
        if self.parts == 1:
            return super().train_step(data)
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        predictions, rest, shares, batch_size = self._in_parts(
            self._train_program, (inputs, labels, sample_weight)
        )
        loss = _weighted_sum([loss for loss, _ in rest], shares)
        gradients = [
            _weighted_sum(slices, shares)
            for slices in zip(*[gradients for _, gradients in rest])
        ]
        self.optimizer.apply(gradients, self.trainable_weights)
        gradient_step.update_loss_metric(self, loss, batch_size)
        return self.compute_metrics(inputs, labels, predictions, sample_weight)

    def test_step(self, data):
        if self.parts == 1:
            return super().test_step(data)
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        predictions, rest, shares, batch_size = self._in_parts(
            self._test_program, (inputs, labels, sample_weight)
        )
        loss = _weighted_sum([loss for (loss,) in rest], shares)
        gradient_step.update_loss_metric(self, loss, batch_size)
        return self.compute_metrics(inputs, labels, predictions, sample_weight)

    def predict_step(self, data):
        if self.parts == 1:
            return super().predict_step(data)
        inputs, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        predictions = self._in_parts(self._predict_program, (inputs,))[0]
        return predictions

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
    outputs): no predictions, and zeros for the rest."""
    return (
        tf.nest.map_structure(lambda t: t[:0], part[0]),
        *tf.nest.map_structure(tf.zeros_like, tuple(part[1:])),
    )


def _weighted_sum(values, shares):
    """`sum_k share_k values_k` over the slices."""
    return tf.add_n(
        [
            value * tf.cast(share, value.dtype)
            for value, share in zip(values, shares)
        ]
    )


def _slices(structure, start, stop):
    """`structure` (nested tensors, or None) sliced `[start:stop]` along
    the batch axis."""
    return tf.nest.map_structure(
        lambda t: None if t is None else t[start:stop], structure
    )
