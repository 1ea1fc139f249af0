"""Short runs that ask why the generative capsule model's top layer goes
unused (README, "Generative capsules"): each trains the model with one set
of options and prints one JSON line with the bound, the top layer's
information per epoch (`distributions.layer_information`), a quick
linear probe on `t0` and `(t0, A0)`, whether a single parent stands for a
digit, and how the template presences vary between digits.

The default recipe: 20,000 MNIST training digits centred on 40x40
canvases, 2 epochs, Adam 1e-3, batch 64; the probe learns from 5,000 of
the training digits and is tested on 2,000 test digits.

Usage:
  python -m research.generative_capsules_ablations --name=default \
      --output=research/results/generative_capsules_ablations.jsonl
  python -m research.generative_capsules_ablations --name=wide_start \
      --preset=paper:initial_pose_scale=0.7931

(The variants of research/generative_capsules_top_layer.md that trained
with options since removed from the library ran at commit e2935bd.)
"""

import json
import os
import time

import keras
import numpy as np
from absl import app, flags

from examples import generative_training, run_flags, runs
from keras_capsules import distributions, trainers
from keras_capsules.datasets import generative_capsule_experiments as data

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)
_TRAIN_SIZE, _TEST_SIZE = run_flags.request(__name__, "train_size", "test_size")

# The script's defaults of the flags of `examples/runs.py` and
# `examples/generative_training.py`.
DEFAULTS = {
    "train_size": 20000,
    "test_size": 2000,
    "epochs": 2,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "jit_compile": "true",
    "preset": "paper",
}
_NAME = flags.DEFINE_string("name", "default", "Name of the variant.")
_OUTPUT = flags.DEFINE_string("output", None, "JSON lines file to append to.")
_SAVE_TO = flags.DEFINE_string(
    "save_to", None, "Where to save the trained model (`.keras`), if set."
)

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


def class_counts(labels, parents, num_parents):
    """`(classes, num_parents)` counts of the images of each class that
    chose each parent (`parents`: one int per image)."""
    counts = np.zeros((labels.max() + 1, num_parents), int)
    np.add.at(counts, (labels, parents), 1)
    return counts


def class_purity(counts):
    """The share of images whose parent's most common class is their own,
    from `class_counts`, rounded to 3 digits."""
    return round(float(counts.max(axis=0).sum() / counts.sum()), 3)


def single_parent_report(model, images, labels, batch_size=250):
    """Whether a single top capsule stands for a whole test image
    (`distributions.single_parent_scores` on the template layer's modes,
    binary presences): `best_single` and `every`, the mean scores of the
    best single parent and of every parent present (nats per image);
    `top_share`, the share of images whose best single parent is the
    most common one; `class_purity`, the share of images whose best
    parent's most common class is their own (1.0 when every parent
    stands for one class; the most common class's share when one parent
    wins every image)."""
    generative = model.decoder.generative_model(relaxed=False)
    single, every = [], []
    for start in range(0, len(images), batch_size):
        modes = model.template_posterior(
            images[start : start + batch_size]
        ).mode()
        templates = {
            "presence": keras.ops.cast(modes["presence_logit"] > 0, "float32"),
            "pose": modes["pose"],
        }
        scores = distributions.single_parent_scores(generative, templates)
        single.append(np.asarray(scores[0]))
        every.append(np.asarray(scores[1]))
    single, every = np.concatenate(single), np.concatenate(every)
    best = single.argmax(axis=1)
    counts = class_counts(labels, best, single.shape[1])
    return {
        "best_single": round(float(single.max(axis=1).mean()), 2),
        "every": round(float(every.mean()), 2),
        "top_share": round(float(np.bincount(best).max() / len(best)), 3),
        "class_purity": class_purity(counts),
    }


def template_presence_logits(model, images, batch_size=250):
    """`(n, n1)` logits of `q(t^1 = 1 | X)` of `images`."""
    return np.concatenate(
        [
            np.asarray(
                model.template_posterior(
                    images[start : start + batch_size]
                ).presence_logits
            )
            for start in range(0, len(images), batch_size)
        ]
    )


def template_presence_report(model, train, train_labels, test, test_labels):
    """Whether the template presences vary with the digit: on `test`,
    `present`, the mean number of templates with `q(t^1 = 1) > 0.5`;
    `information`, their presence information in nats per image
    (`distributions.layer_information`); `probe`, a linear probe on the
    template presence logits (learned from `train`)."""
    train_logits = template_presence_logits(model, train)
    test_logits = template_presence_logits(model, test)
    information, probe = generative_training.presence_report(
        train_logits, train_labels, test_logits, test_labels, epochs=30
    )
    return {
        "present": round(float((test_logits > 0).sum(axis=1).mean()), 2),
        "information": round(float(information), 2),
        "probe": round(probe, 3),
    }


def main(argv):
    del argv
    runs.set_defaults(**DEFAULTS)
    keras.utils.set_random_seed(runs.SEED.value)
    canvas = generative_training.CANVAS_SIZE.value
    train, train_labels = data.load_images(
        "mnist", "train", _TRAIN_SIZE.value, canvas, runs.SEED.value
    )
    test, test_labels = data.load_images(
        "mnist", "test", _TEST_SIZE.value, canvas, runs.SEED.value
    )
    model = generative_training.build_model(train.shape[1:])
    start = time.time()
    epoch_batches = generative_training.training_images(train)
    history = {}
    for epoch in range(_EPOCHS.value):
        epoch_history = model.fit(
            epoch_batches(epoch),
            shuffle=False,  # ordered by the epoch's number already
            initial_epoch=epoch,
            epochs=epoch + 1,
            # Batches of 32, as its stored lines were measured.
            validation_data=generative_training.test_images(test, 32),
            verbose=2,
        ).history
        for key, values in epoch_history.items():
            history.setdefault(key, []).extend(values)
    seconds = time.time() - start
    if _SAVE_TO.value:
        os.makedirs(os.path.dirname(_SAVE_TO.value) or ".", exist_ok=True)
        model.save(_SAVE_TO.value)

    train_features, test_features = (
        generative_training.top_features(model, train[:5000]),
        generative_training.top_features(model, test),
    )
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
        "single_parent": single_parent_report(
            model, test[:1000], test_labels[:1000]
        ),
        "template_presences": template_presence_report(
            model, train[:5000], train_labels[:5000], test, test_labels
        ),
        **{
            key: [round(float(v), 2) for v in history[key]] for key in _REPORTED
        },
    }
    print(json.dumps(result), flush=True)
    if _OUTPUT.value:
        with open(_OUTPUT.value, "a") as file:
            file.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    runs.set_defaults(**DEFAULTS)
    app.run(main)
