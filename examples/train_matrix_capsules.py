"""Trains the matrix-capsule network with EM routing (Hinton, Sabour,
Frosst 2018): spread loss, Adam. `--preset` names the routing of every
capsule layer, a preset of `layers.EMRouting`: `standardized` (the
default: standardised costs, 2 iterations) or `paper` (Procedure 1 as
written, 3 iterations), with any of its fields changed after a colon:
`--preset=standardized:num_iterations=3,assignment_smoothing=0`
(docs/guides/matrix-capsules.md). The spread-loss margin rises linearly
from 0.2 to 0.9 over the run (the paper's text).

Datasets: `smallnorb` (TFDS; 48x48, standardised, random 32x32 crops with
brightness and contrast, centre crop at test; `--multi_crop` averages the
class activations over nine crops), `mnist`, `fashion_mnist` (TFDS) and
`procedural_shapes` (built in).

On JAX and PyTorch (`KERAS_BACKEND`; TensorFlow need not be installed)
it trains on `mnist`, `fashion_mnist` (prepared-array files in
`TFDS_DATA_DIR`, `datasets.save_image_arrays`) and `procedural_shapes`,
held in memory; smallNORB needs TensorFlow.

`--viewpoints=azimuth|elevation` (smallNORB) or `rotation` (procedural)
trains on familiar viewpoints and reports errors on familiar (`test`) and
novel (`test_novel`) viewpoints. `--cnn_baseline` runs the paper's
novel-viewpoint comparison (sec. 5.1): it first trains the CNN baseline,
then trains the capsules until their familiar-viewpoint error matches the
CNN's, and reports both models' novel-viewpoint errors.

`--model_dir` holds a backup that resumes an interrupted run, the latest
model, TensorBoard logs and `results.json`; `--export_dir` writes a
SavedModel whose `serve` signature maps images to class activations.

Usage:
  python -m examples.train_matrix_capsules --dataset=mnist --model=small \
      --epochs=2 --model_dir=runs/em_mnist
"""

import keras
from absl import app, flags

from examples import (
    array_data,
    fitting,
    matrix_capsule_evaluation,
    presets,
    run_flags,
    run_results,
    runs,
)
from keras_capsules import callbacks, datasets, layers, losses, models
from keras_capsules.callbacks.training_step import optimizer_step
from keras_capsules.datasets import matrix_capsule_names as names
from keras_capsules.models.matrix_capsnet import DEFAULT_ROUTING

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

# The script's defaults of the run-level flags.
DEFAULTS = {
    "dataset": "mnist",
    "preset": DEFAULT_ROUTING,
    "epochs": 10,
    "batch_size": 32,
    "learning_rate": 3e-3,
    "jit_compile": "true",
    "backup_steps": 200,
}

(
    _DATASET,
    _PRESET,
    _TRAIN_SIZE,
    _TEST_SIZE,
    _LEARNING_RATE,
    _BATCH_PARTS,
    _EXPORT_DIR,
) = run_flags.request(
    __name__,
    "dataset",
    "preset",
    "train_size",
    "test_size",
    "learning_rate",
    "batch_parts",
    "export_dir",
)
_MODEL = flags.DEFINE_enum(
    "model",
    "full",
    ["full", "small"],
    "`full`: A=B=C=D=32 (310K weights); `small`: A=64, B=8, C=D=16 (68K).",
)
_VIEWPOINTS = flags.DEFINE_enum(
    "viewpoints",
    "none",
    list(names.VIEWPOINT_SPLITS),
    "Train on familiar viewpoints only (sec. 5.1).",
)
_CNN_BASELINE = flags.DEFINE_boolean(
    "cnn_baseline",
    False,
    "Novel-viewpoint comparison: train the CNN baseline first, stop the "
    "capsules at its familiar-viewpoint error.",
)
_BASELINE_EPOCHS = flags.DEFINE_integer(
    "baseline_epochs", 5, "Epochs of the CNN baseline."
)
_MULTI_CROP = flags.DEFINE_boolean(
    "multi_crop", False, "smallNORB: also test on nine crops per image."
)


def load_train_epochs():
    """The training batches as a function of the epoch (resumable)."""
    if array_data.in_memory():
        arrays = array_data.load_arrays(
            _DATASET.value, "train", _TRAIN_SIZE.value
        )
        return runs.epoch_batches(arrays, _BATCH_SIZE.value, runs.SEED.value)
    return datasets.load_matrix_capsule_epochs(
        _DATASET.value,
        _BATCH_SIZE.value,
        _VIEWPOINTS.value,
        _TRAIN_SIZE.value,
        runs.SEED.value,
        drop_remainder=runs.static_batches(),
    )


def load(split, full_images=False):
    """The batches of test split `split`, in memory or cached."""
    if array_data.in_memory():
        arrays = array_data.load_arrays(_DATASET.value, split, _TEST_SIZE.value)
        return runs.evaluation_batches(arrays, _BATCH_SIZE.value)
    return datasets.load_matrix_capsule_data(
        _DATASET.value,
        split,
        _BATCH_SIZE.value,
        _VIEWPOINTS.value,
        _TRAIN_SIZE.value if split == "train" else _TEST_SIZE.value,
        runs.SEED.value,
        full_images,
    ).cache()


def test_splits():
    novel = _VIEWPOINTS.value != "none"
    return ("test", "test_novel") if novel else ("test",)


def train_cnn_baseline(image_shape, num_classes, train, tests):
    """The paper's CNN baseline, trained on the batches of `train(epoch)`
    for each epoch; returns its weights and evaluation."""
    cnn = models.viewpoint_cnn(num_classes, image_shape)
    cnn.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss="sparse_categorical_crossentropy",
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=runs.use_xla(),
    )
    for epoch in range(_BASELINE_EPOCHS.value):
        cnn.fit(
            train(epoch),
            shuffle=False,  # ordered by the epoch's number already
            initial_epoch=epoch,
            epochs=epoch + 1,
            verbose=2,
        )
    return {
        "parameters": cnn.count_params(),
        "evaluation": run_results.evaluate(cnn, tests),
    }


def routing():
    """The `layers.EMRouting` of `--preset`."""
    return presets.parse(
        _PRESET.value or DEFAULTS["preset"],
        "preset",
        layers.EMRouting.PRESETS,
    )


def check_settings_flags():
    """Raises `app.UsageError` unless `--preset` names routing settings."""
    routing()


def build_model(image_shape, num_classes, settings):
    """The matrix-capsule network of `--model`, routed by `settings` (not
    yet compiled)."""
    sizes = (32, 32, 32, 32) if _MODEL.value == "full" else (64, 8, 16, 16)
    return models.matrix_capsnet(
        *sizes,
        num_classes=num_classes,
        input_shape=image_shape,
        routing=settings,
    )


def check_in_memory_flags():
    """Raises `app.UsageError` unless the in-memory data (every backend
    but TensorFlow) hold `--dataset` and its `--viewpoints` split."""
    array_data.check_dataset(_DATASET.value, "examples.train_matrix_capsules")
    try:
        names.check_names(_DATASET.value, _VIEWPOINTS.value)
    except ValueError as error:
        raise app.UsageError(str(error)) from error


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    runs.set_defaults(**DEFAULTS)
    settings = routing()  # Refuses a --preset that names no settings.
    if _CNN_BASELINE.value and _VIEWPOINTS.value == "none":
        raise app.UsageError("--cnn_baseline needs a --viewpoints split.")
    strategy = runs.set_up(**DEFAULTS)
    dataset = runs.choice(_DATASET, names.DATASETS)
    if array_data.in_memory():
        check_in_memory_flags()
    image_shape, num_classes = names.dataset_info(dataset)
    train = load_train_epochs()
    tests = {split: load(split) for split in test_splits()}
    steps_per_epoch = (
        len(train(0)) if array_data.in_memory() else int(train(0).cardinality())
    )
    extra = {"routing": settings.get_config()}
    extra_callbacks = []
    if _CNN_BASELINE.value:
        with strategy.scope():
            extra["cnn"] = train_cnn_baseline(
                image_shape, num_classes, train, tests
            )
        cnn_accuracy = extra["cnn"]["evaluation"]["test"]["accuracy"]
        stopper = matrix_capsule_evaluation.StopAtError(
            tests["test"], 1.0 - cnn_accuracy, steps_per_epoch // 4
        )
        extra_callbacks.append(stopper)
    with strategy.scope():
        model = runs.in_batch_parts(
            build_model(image_shape, num_classes, settings), _BATCH_PARTS.value
        )
        loss = losses.SpreadLoss(0.2)
        model.compile(
            optimizer=keras.optimizers.Adam(_LEARNING_RATE.value),
            loss=loss,
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            jit_compile=runs.use_xla(),
        )
    total_steps = _EPOCHS.value * steps_per_epoch
    extra_callbacks.append(
        callbacks.SpreadLossMargin(loss, total_steps, 0.2, 0.9)
    )

    def after_training(model):
        results = {**extra, "steps": optimizer_step(model)}
        if _CNN_BASELINE.value:
            results["stopped_at_matched_error_step"] = stopper.reached
        if _MULTI_CROP.value and dataset == "smallnorb":
            accuracy = matrix_capsule_evaluation.multi_crop_accuracy(
                model, load("test", full_images=True)
            )
            results["evaluation"] = {"test_multi_crop": {"accuracy": accuracy}}
        return results

    run_results.train_and_evaluate(
        main,
        model,
        train,
        tests,
        "matrix_capsnet.keras",
        steps_per_epoch * _BATCH_SIZE.value,
        dataset,
        extra_callbacks=extra_callbacks,
        validation_split="test",
        extra_results=after_training,
    )
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        lambda: fitting.tensor_spec((None, *image_shape), "float32", "images"),
        serve=lambda images: activations_and_classes(model, images),
    )


def activations_and_classes(model, images):
    """The serving outputs: `{"activations", "class_ids"}`."""
    activations = keras.ops.cast(model(images, training=False), "float32")
    return {
        "activations": activations,
        "class_ids": keras.ops.argmax(activations, -1),
    }


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
