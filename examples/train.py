"""Any routing family on one backbone: `models.capsule_classifier`.

Trains the classifier with `--routing` (dynamic, em, heinsen, or
capsule regression as a head) on MNIST, Fashion-MNIST or the built-in
procedural shapes, whose test has familiar and novel viewpoints, with
each family's own loss (`models.classifier_loss`) and everything else
equal. `examples/compare_routing.py` runs every family on every dataset
and tabulates them. The run-level flags (`--epochs`, `--model_dir`,
`--export_dir`, `--strategy`, ...) are `examples/runs.py`'s.

It runs on every Keras backend (`KERAS_BACKEND=jax` or `torch`), where
TensorFlow need not be installed: MNIST and Fashion-MNIST then come from
a prepared-array file in `TFDS_DATA_DIR` (`datasets.save_image_arrays`),
and on JAX `--strategy=mirrored` trains on every local device
(`keras.distribution.DataParallel`).

Usage:
  python -m examples.train --routing=heinsen --dataset=mnist \\
      --model_dir=runs/heinsen_mnist
"""

import keras
import numpy as np
from absl import flags

from examples import array_data, fitting, run_flags, run_results, runs
from keras_capsules import callbacks, models

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

# The script's defaults of the flags of `examples/runs.py`: Adam's peak
# learning rate (cosine decay), `--capsule_dim` the columns of each class
# capsule's 4 x d pose (the capsules' size in capsule regression).
DEFAULTS = {
    "dataset": "mnist",
    "epochs": 2,
    "batch_size": 32,
    "learning_rate": 1e-3,
    "capsule_dim": 4,
    "routing_iterations": 3,
}

(
    _DATASET,
    _TRAIN_SIZE,
    _TEST_SIZE,
    _LEARNING_RATE,
    _CAPSULE_DIM,
    _ROUTING_ITERATIONS,
    _BATCH_PARTS,
    _EXPORT_DIR,
) = run_flags.request(
    __name__,
    "dataset",
    "train_size",
    "test_size",
    "learning_rate",
    "capsule_dim",
    "routing_iterations",
    "batch_parts",
    "export_dir",
)
_ROUTING = flags.DEFINE_enum(
    "routing", "heinsen", list(models.ROUTINGS), "The class capsules."
)
_PRIMARY_TYPES = flags.DEFINE_integer(
    "primary_types", 8, "Primary capsule types per position."
)


def main(argv):
    del argv
    strategy = runs.set_up(**DEFAULTS)
    name, routing = runs.choice(_DATASET, array_data.DATASETS), _ROUTING.value
    batch_size, epochs = _BATCH_SIZE.value, _EPOCHS.value
    images, labels = array_data.load_arrays(name, "train", _TRAIN_SIZE.value)
    train = runs.epoch_batches((images, labels), batch_size, runs.SEED.value)
    tests = {
        split: runs.evaluation_batches(
            array_data.load_arrays(name, split, _TEST_SIZE.value),
            batch_size,
        )
        for split in array_data.test_splits(name)
    }
    total_steps = epochs * int(np.ceil(len(labels) / batch_size))
    with strategy.scope():
        model = models.capsule_classifier(
            images.shape[1:],
            int(labels.max()) + 1,
            routing=routing,
            num_primary_types=_PRIMARY_TYPES.value,
            capsule_dim=_CAPSULE_DIM.value,
            num_iterations=_ROUTING_ITERATIONS.value,
        )
        model = runs.in_batch_parts(model, _BATCH_PARTS.value)
        loss = models.classifier_loss(routing)
        model.compile(
            optimizer=keras.optimizers.Adam(
                keras.optimizers.schedules.CosineDecay(
                    _LEARNING_RATE.value, total_steps
                )
            ),
            loss=loss,
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            jit_compile=runs.use_xla(),
        )
    extra_callbacks = (
        [callbacks.SpreadLossMargin(loss, total_steps)]
        if routing == "em"
        else []
    )
    run_results.train_and_evaluate(
        main,
        model,
        train,
        tests,
        f"capsule_classifier_{routing}.keras",
        len(labels),
        name,
        extra_callbacks=extra_callbacks,
    )
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        lambda: fitting.tensor_spec(
            (None, *images.shape[1:]), "float32", "images"
        ),
    )


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
