"""How `examples/train_matrix_capsules.py` evaluates beyond one pass
over a test split: stopping where a familiar-viewpoint error is matched
(the paper's comparison with its CNN, sec. 5.1) and smallNORB's accuracy
over nine crops of each test image."""

import keras

from keras_capsules.callbacks.training_step import optimizer_step


class StopAtError(keras.callbacks.Callback):
    """Stops training once the error on `data` is at most `target` (checked
    every `every` steps): the paper matches familiar-viewpoint errors."""

    def __init__(self, data, target, every):
        super().__init__()
        self.data, self.target, self.every = data, target, every
        self.reached = None

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
        if step % self.every:
            return
        scores = self.model.evaluate(self.data, verbose=0, return_dict=True)
        if 1.0 - scores["accuracy"] <= self.target:
            self.reached = step
            self.model.stop_training = True


def multi_crop_accuracy(model, batches):
    """smallNORB test accuracy with the class activations averaged over
    nine crops of each of the 48x48 test images of `batches` (TensorFlow
    only: the crops come from the `tf.data` pipeline's helpers)."""
    import tensorflow as tf  # noqa: PLC0415

    from keras_capsules.datasets import (  # noqa: PLC0415
        matrix_capsule_experiments as experiments,
    )

    right = total = 0
    for images, labels in batches:
        crops = experiments.test_crops(images)
        activations = tf.reduce_mean(
            tf.stack([model(crop, training=False) for crop in crops]), 0
        )
        predicted = tf.argmax(activations, -1, output_type=labels.dtype)
        right += int(tf.reduce_sum(tf.cast(predicted == labels, tf.int32)))
        total += int(labels.shape[0])
    return round(right / total, 5)
