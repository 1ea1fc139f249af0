"""What the generative-capsule scripts share: the model's flags, the
model they describe and the training images' pipeline.

`--preset` names the model's settings
(`models.GenerativeCapsuleConfig.PRESETS`), optionally with fields
changed: `--preset=paper:num_top_capsules=32,top_pose_refinement_steps=3`.
"""

import keras
import numpy as np
import tensorflow as tf
from absl import flags

from examples import presets, run_flags, runs
from keras_capsules import distributions, models, trainers
from keras_capsules.datasets import epoch_order, image_transforms

# The run-level flags this module reads.
_BATCH_SIZE, LEARNING_RATE, _PRESET = run_flags.request(
    __name__, "batch_size", "learning_rate", "preset"
)

CANVAS_SIZE = flags.DEFINE_integer(
    "canvas_size", 40, "Images are centred on a square canvas this large."
)
MAX_SHIFT = flags.DEFINE_integer(
    "max_shift",
    0,
    "Training images are shifted by up to this many pixels along each axis, "
    "a new shift every epoch (0: centred, the paper's MNIST training set).",
)


def config():
    """The `models.GenerativeCapsuleConfig` of `--preset` (the paper's if
    unset)."""
    return presets.parse(
        _PRESET.value or "paper",
        "preset",
        models.GenerativeCapsuleConfig.PRESETS,
    )


def check_settings_flags():
    """Raises `app.UsageError` unless `--preset` names generative capsule
    settings."""
    config()


def build_model(image_shape):
    """The generative capsule autoencoder of `--preset`, compiled with Adam
    at `--learning_rate` (call in the strategy's scope)."""
    model = models.generative_capsule_autoencoder(
        image_shape, config(), seed=runs.SEED.value
    )
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE.value),
        jit_compile=runs.use_xla(),
    )
    return model


# The fields of the settings that say how a trained model infers its top
# layer (the others are its sizes and generative model).
INFERENCE_FIELDS = (
    "top_pose_refinement_steps",
    "top_presence_refinement_steps",
)


def apply_inference_flags(model):
    """With `--preset` given on the command line, sets on a saved `model`,
    loaded for evaluation, how the preset computes the top layer
    (`INFERENCE_FIELDS`), so that a model can be evaluated with its top
    poses or presences computed otherwise than in its training; returns
    `{field: value}` of those that changed. Without `--preset` the saved
    model's are kept."""
    if flags.FLAGS["preset"].using_default_value:
        return {}
    settings = config()
    changes = {
        name: getattr(settings, name)
        for name in INFERENCE_FIELDS
        if getattr(settings, name) != getattr(model.config, name)
    }
    model.config = model.config.replace(**changes)
    return changes


def training_images(images):
    """`images` as shuffled batches of `--batch_size` as a function of
    the epoch (for `runs.fit`; the last partial batch dropped: one batch
    shape, one XLA compilation), each image shifted by up to
    `--max_shift` pixels; order and shifts are drawn from `--seed` and
    the epoch's number (`datasets.epoch_order`)."""
    seed = runs.SEED.value
    shuffled = epoch_order.epoch_batches(
        (images,), _BATCH_SIZE.value, seed, drop_remainder=True
    )
    canvas = images.shape[1]

    def of_epoch(epoch):
        def prepare(index, batch):
            (batch,) = batch
            if not MAX_SHIFT.value:
                return batch
            return image_transforms.random_translate(
                batch,
                canvas,
                MAX_SHIFT.value,
                epoch_order.batch_seed(seed, epoch, index),
            )

        data = shuffled(epoch).map(prepare, tf.data.AUTOTUNE)
        return data.prefetch(tf.data.AUTOTUNE)

    return of_epoch


def test_images(images, batch_size=500):
    """`images` in batches of `batch_size`, for evaluation. (The
    information measures are per batch, and each batch draws from the
    model's seed generator: the batch size changes both.)"""
    return tf.data.Dataset.from_tensor_slices(images).batch(batch_size)


def in_batches(function, images, batch_size=500):
    """`function` of `images`, computed 500 at a time, as NumPy arrays
    (any nest of them)."""
    outputs = [
        function(images[start : start + batch_size])
        for start in range(0, len(images), batch_size)
    ]
    return tf.nest.map_structure(
        lambda *parts: np.concatenate([np.asarray(p) for p in parts]),
        *outputs,
    )


def top_features(model, images):
    """The probes' features of `images`: `models.top_layer_features` of
    their amortised latents (`t0`, `t0_A0`)."""
    return models.top_layer_features(in_batches(model.encode, images))


def presence_report(
    train_logits, train_labels, test_logits, test_labels, **probe_options
):
    """What `(n, capsules)` presence logits say about the images: their
    presence information on the test images, nats per image
    (`distributions.layer_information` without poses), and the accuracy
    of a linear probe learned from the training images
    (`trainers.linear_probe_accuracy` with `probe_options`)."""
    information = distributions.layer_information(
        test_logits, np.zeros((*test_logits.shape, 1), np.float32)
    )["presence_information"]
    probe = trainers.linear_probe_accuracy(
        train_logits,
        train_labels,
        {"test": (test_logits, test_labels)},
        **probe_options,
    )["test"]
    return float(information), probe
