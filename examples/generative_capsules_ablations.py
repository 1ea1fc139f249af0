"""Short runs that ask why the generative capsule model's top layer goes
unused (README, "Generative capsules"): each trains the model with one set
of options and prints one JSON line with the bound, the top layer's
information per epoch (`distributions.layer_information`) and a quick
linear probe on `t0` and `(t0, A0)`.

The default recipe: 20,000 MNIST training digits centred on 40x40
canvases, 2 epochs, Adam 1e-3, batch 64; the probe learns from 5,000 of
the training digits and is tested on 2,000 test digits.

Usage:
  python -m examples.generative_capsules_ablations --name=default \
      --output=docs/results/generative_capsules_ablations.jsonl
  python -m examples.generative_capsules_ablations --name=wide_start \
      --initial_pose_scale=0.7931
"""

import json
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from keras_capsules import models, trainers
from keras_capsules.datasets import generative_capsule_experiments as data
from keras_capsules.datasets import image_transforms

_NAME = flags.DEFINE_string("name", "default", "Name of the variant.")
_TRAIN_SIZE = flags.DEFINE_integer("train_size", 20000, "Training digits.")
_TEST_SIZE = flags.DEFINE_integer("test_size", 2000, "Test digits.")
_EPOCHS = flags.DEFINE_integer("epochs", 2, "Epochs.")
_CANVAS = flags.DEFINE_integer("canvas_size", 40, "Canvas side.")
_MAX_SHIFT = flags.DEFINE_integer("max_shift", 0, "Random shifts (pixels).")
_WARMUP = flags.DEFINE_integer("top_kl_warmup_steps", 0, "KL warm-up.")
_STOP_GRADIENT = flags.DEFINE_boolean(
    "stop_gradient_between_layers", False, "SCAE's stop gradient."
)
_COORDINATES = flags.DEFINE_boolean(
    "coordinate_channels", False, "Positions for the template encoder."
)
_NORMALIZE = flags.DEFINE_boolean(
    "normalize_top_encoder_inputs", False, "Batch-normalised top inputs."
)
_INFORMATION = flags.DEFINE_float(
    "presence_information_weight", 0.0, "Weight of the presence MI."
)
_SELECTION = flags.DEFINE_float(
    "selection_information_weight", 0.0, "Weight of the selection MI."
)
_TEMPERATURE = flags.DEFINE_float("temperature", 1.0, "Concrete temperature.")
_INITIAL_POSE_SCALE = flags.DEFINE_float(
    "initial_pose_scale",
    None,
    "c_ij at initialisation (default 1.5 x min_pose_scale; 0.7931: softplus"
    " 0 at the default minimum).",
)
_MIN_POSE_SCALE = flags.DEFINE_float(
    "min_pose_scale", 0.1, "Lower bound of c_ij (paper: 0.1)."
)
_REFINEMENT_STEPS = flags.DEFINE_integer(
    "top_pose_refinement_steps", 0, "EM steps on the top layer's poses."
)
_ZERO_OFFSETS = flags.DEFINE_boolean(
    "zero_pose_offsets", False, "Start every M_ij at the identity."
)
_OUTPUT = flags.DEFINE_string("output", None, "JSON lines file to append to.")

_REPORTED = (
    "elbo",
    "reconstruction",
    "template_kl",
    "top_kl",
    "val_elbo",
    "val_top_information",
    "val_top_presence_information",
    "val_top_pose_magnitude",
    "val_top_presence_spread",
    "val_top_explained",
)


def main(argv):
    del argv
    keras.utils.set_random_seed(0)
    canvas = _CANVAS.value
    train, train_labels = data.load_images(
        "mnist", "train", _TRAIN_SIZE.value, canvas, 0
    )
    test, test_labels = data.load_images(
        "mnist", "test", _TEST_SIZE.value, canvas, 0
    )
    model = models.generative_capsule_autoencoder(
        image_shape=train.shape[1:],
        seed=0,
        coordinate_channels=_COORDINATES.value,
        normalize_top_encoder_inputs=_NORMALIZE.value,
        top_kl_warmup_steps=_WARMUP.value,
        stop_gradient_between_layers=_STOP_GRADIENT.value,
        presence_information_weight=_INFORMATION.value,
        selection_information_weight=_SELECTION.value,
        temperature=_TEMPERATURE.value,
        initial_pose_scale=_INITIAL_POSE_SCALE.value,
        min_pose_scale=_MIN_POSE_SCALE.value,
        top_pose_refinement_steps=_REFINEMENT_STEPS.value,
    )
    if _ZERO_OFFSETS.value:
        offsets = model.decoder.pose_offsets
        offsets.assign(np.zeros(offsets.shape, "float32"))
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=True)
    images = tf.data.Dataset.from_tensor_slices(train).shuffle(20000, seed=0)
    images = images.batch(64, drop_remainder=True)
    if _MAX_SHIFT.value:
        images = images.map(
            lambda x: image_transforms.random_translate(
                x, canvas, _MAX_SHIFT.value
            )
        )
    start = time.time()
    history = model.fit(
        images.prefetch(2),
        epochs=_EPOCHS.value,
        validation_data=(test,),
        verbose=2,
    ).history
    seconds = time.time() - start

    def features(x):
        latents = [model.encode(x[i : i + 500]) for i in range(0, len(x), 500)]
        return models.top_layer_features(
            {
                key: np.concatenate([np.asarray(part[key]) for part in latents])
                for key in latents[0]
            }
        )

    train_features, test_features = features(train[:5000]), features(test)
    probe = {
        kind: trainers.linear_probe_accuracy(
            train_features[kind],
            train_labels[:5000],
            {"test": (test_features[kind], test_labels)},
            epochs=30,
        )["test"]
        for kind in ("t0", "t0_A0")
    }
    result = {
        "name": _NAME.value,
        "secs": round(seconds),
        "probe": probe,
        **{
            key: [round(float(v), 2) for v in history[key]] for key in _REPORTED
        },
    }
    print(json.dumps(result), flush=True)
    if _OUTPUT.value:
        with open(_OUTPUT.value, "a") as file:
            file.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    app.run(main)
