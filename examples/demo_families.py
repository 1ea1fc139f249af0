"""The demo's runs: each capsule family trained on the procedural shapes
(`datasets.load_procedural_shapes`) and tested on familiar and novel
viewpoints; `examples/demo.py` runs them and prints the table."""

import math
import os

import keras
import numpy as np
import tensorflow as tf

from examples import run_flags, runs
from keras_capsules import (
    callbacks,
    datasets,
    losses,
    models,
    plots,
    recipes,
    trainers,
)
from keras_capsules.layers import CapsuleRegression

_BATCH_PARTS = run_flags.request(__name__, "batch_parts")
_PROJECTION_DIM = 64
_SPLITS = ("train", "validation", "test", "test_novel")


def load_features(train_size, seed, test_size=None):
    """Procedural images, projected on the training set's top directions;
    `test_size`: only the first images of each test split (all if None)."""
    raw = {
        split: datasets.load_procedural_shapes(split, seed=seed)
        for split in _SPLITS
    }
    raw["train"] = {k: v[:train_size] for k, v in raw["train"].items()}
    for split in ("test", "test_novel"):
        raw[split] = {k: v[:test_size] for k, v in raw[split].items()}
    projection = datasets.PrincipalProjection(_PROJECTION_DIM, center=False)
    projection.fit(raw["train"]["image"])
    features = {
        split: (projection.transform(raw[split]["image"]), raw[split]["label"])
        for split in _SPLITS
    }
    return raw, features


def batches(x, y):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(4096).cache()


def run_em(features, capsule_dim, architecture, max_iterations):
    trainer = trainers.CapsuleRegressionEM(
        len(datasets.SHAPE_NAMES),
        capsule_dim,
        architecture=architecture,
        schedule=trainers.EMSchedule(max_iterations=max_iterations),
    )
    history = trainer.fit(
        batches(*features["train"]), batches(*features["validation"]), verbose=0
    )
    errors = {
        s: trainer.evaluate(batches(*features[s]))
        for s in ("test", "test_novel")
    }
    layer = trainer.to_layer() if architecture == "multiclass" else None
    return errors, len(history["error"]), layer


def run_sgd(features, capsule_dim, epochs):
    x, y = features["train"]
    model = keras.Sequential(
        [
            keras.Input((x.shape[1],)),
            CapsuleRegression(len(datasets.SHAPE_NAMES), capsule_dim),
        ]
    )
    model.compile(
        keras.optimizers.Adam(3e-3),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=runs.use_xla(),
    )
    model.fit(
        x,
        y,
        batch_size=128,
        epochs=epochs,
        validation_data=features["validation"],
        verbose=0,
    )
    errors = {
        s: 1.0 - model.evaluate(*features[s], verbose=0)[1]
        for s in ("test", "test_novel")
    }
    return errors, epochs, model.layers[-1]


def viewpoint_errors(model, raw, one_hot=False):
    """`model`'s test errors on familiar (`test`) and novel (`test_novel`)
    viewpoints; `one_hot`: the model takes one-hot labels."""
    errors = {}
    for split in ("test", "test_novel"):
        labels = raw[split]["label"]
        if one_hot:
            labels = keras.utils.to_categorical(
                labels, len(datasets.SHAPE_NAMES)
            )
        scores = model.evaluate(
            raw[split]["image"], labels, return_dict=True, verbose=0
        )
        errors[split] = 1.0 - scores["accuracy"]
    return errors


def run_capsnet(raw, epochs, output_dir):
    """A small CapsNet (64 conv channels, 8 primary capsule types) on the
    images; writes its reconstructions and perturbation figures."""
    model = models.capsnet((28, 28, 1), len(datasets.SHAPE_NAMES), "small")
    model.compile(keras.optimizers.Adam(2e-3), metrics=["accuracy"])
    model.fit(
        raw["train"]["image"],
        raw["train"]["label"],
        batch_size=64,
        epochs=epochs,
        verbose=0,
    )
    errors = viewpoint_errors(model, raw)
    images = raw["test"]["image"][:8]
    capsules = model.encode(images)
    predictions = np.argmax(model.capsule_length(capsules), axis=-1)
    plots.plot_reconstructions(
        images,
        model.reconstruct(capsules).numpy(),
        os.path.join(output_dir, "capsnet_reconstructions.png"),
        labels=raw["test"]["label"][:8],
        predictions=predictions,
    )
    plots.plot_capsule_perturbations(
        lambda masked: model.decoder(masked).numpy(),
        capsules[0].numpy(),
        int(predictions[0]),
        os.path.join(output_dir, "capsnet_perturbations.png"),
    )
    return errors


def run_heinsen(raw, epochs):
    """A small Heinsen image model (32 channels, 16 part capsules) with the
    paper's recipe: mixup, RAdam on one cycle (peak rate 3e-3 for this
    short run)."""
    classifier = models.heinsen_image(
        (None, None, 1), len(datasets.SHAPE_NAMES), filters=32, num_parts=16
    )
    model = recipes.MixupClassifier(classifier, alpha=0.2, seed=0)
    batch_size = 32
    steps = epochs * -(-len(raw["train"]["label"]) // batch_size)
    model.compile(
        optimizer=recipes.one_cycle_radam(steps, learning_rate=(1e-4, 3e-3)),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    num_classes = len(datasets.SHAPE_NAMES)
    model.fit(
        raw["train"]["image"],
        keras.utils.to_categorical(raw["train"]["label"], num_classes),
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
    )
    return viewpoint_errors(model, raw, one_hot=True)


def run_matrix_capsules(raw, epochs, train_size, output_dir):
    """The paper's small matrix-capsule model (A=64, B=8, C=D=16), default
    recipe, with spread loss, the margin rising from 0.2 to 0.9 over the
    run, each batch in `--batch_parts` slices; writes the vote-distance
    histograms of Fig. 2."""
    num_classes = len(datasets.SHAPE_NAMES)
    classifier = models.small_matrix_capsnet(num_classes, (28, 28, 1))
    model = runs.in_batch_parts(classifier, _BATCH_PARTS.value)
    loss = losses.SpreadLoss()
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=loss,
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=runs.use_xla(),
    )
    images = raw["train"]["image"][:train_size]
    labels = raw["train"]["label"][:train_size]
    batch_size = 32
    total_steps = epochs * math.ceil(len(images) / batch_size)
    model.fit(
        images,
        labels,
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
        callbacks=[callbacks.SpreadLossMargin(loss, total_steps)],
    )
    plots.plot_vote_distances(
        classifier,
        raw["test"]["image"][:3],
        os.path.join(output_dir, "em_vote_distances.png"),
        class_names=list(datasets.SHAPE_NAMES),
    )
    return viewpoint_errors(model, raw)


def run_generative_capsules(raw, epochs, train_size, output_dir):
    """The generative capsule model (Smith et al. 2020), trained without
    labels; errors are those of a linear probe on its top capsules
    `(t0, A0)`. Writes reconstructions and templates."""
    images = raw["train"]["image"][:train_size]
    model = models.generative_capsule_autoencoder(
        image_shape=images.shape[1:], seed=runs.SEED.value
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3), jit_compile=runs.use_xla()
    )
    model.fit(images, batch_size=64, epochs=epochs, verbose=0)

    def features(x):
        return models.top_layer_features(model.encode(x))["t0_A0"]

    accuracy = trainers.linear_probe_accuracy(
        features(images),
        raw["train"]["label"][:train_size],
        {
            s: (features(raw[s]["image"]), raw[s]["label"])
            for s in ("test", "test_novel")
        },
        epochs=30,
        seed=runs.SEED.value,
    )
    examples = raw["test_novel"]["image"][:8]
    plots.plot_image_rows(
        {"input": examples, "reconstruction": np.asarray(model(examples))},
        os.path.join(output_dir, "generative_reconstructions.png"),
    )
    plots.plot_templates(
        model.decoder, os.path.join(output_dir, "generative_templates.png")
    )
    return {s: 1.0 - accuracy[s] for s in accuracy}
