"""Trains the generative capsule model of Smith, Schut, Gal and van der Wilk
(2020) without labels, then measures its latent variables with linear
probes (Table 1).

1. Fits the model (16 top capsules, 16 templates of 12x12, amortised
   CNN + set-transformer encoders) by its bound on the training images,
   centred on a `--canvas_size` canvas (or shifted by up to
   `--max_shift` pixels). The bound's history per epoch is printed and
   written to `history.csv`, with what the top layer carries
   (`top_information` and its parts; README, "Is the top layer used?").
   The flags after `--pose_posterior` switch on the options measured
   there; their defaults train the paper's bound.
2. Fits a VAE baseline (10-D latent, 128 hidden units) on the same images.
3. Linear probes on the top presences `t0` (their logits), on `(t0, A0)`,
   and on the VAE's `(mu, sigma)`, tested on the test images rotated by
   0/45/90/135/180 degrees and on affNIST-style random affine
   transformations. The paper does not say what its probes learn from;
   `--probe_protocol=both` reports two readings: `upright` (the probe
   learns from `--probe_train_size` untransformed training images) and
   `matched` (from the same training images transformed like the test
   set).
4. Test-time ("free form") inference on `--free_form_examples` training
   images and as many of every test set: the `t0` probe on amortised
   latents and on latents refined by `--free_form_steps` steps of the
   bound, and the bound before and after.
5. Figures: templates, and rotated test digits over their amortised and
   free-form reconstructions (Figure 3).

`--model_dir` holds a backup that resumes an interrupted run, the model
(`model.keras`), the VAE, `history.csv`, `results.json` and the figures;
`--evaluate_only` reloads them and writes `evaluation.json` instead;
`--export_dir` writes a SavedModel whose `serve` signature maps images to
their latent variables and reconstruction.

Usage:
  python -m examples.train_generative_capsules --dataset=mnist \
      --epochs=5 --model_dir=runs/generative_mnist
"""

import json
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from examples import distribution, fitting
from keras_capsules import models, plots, trainers
from keras_capsules.datasets import generative_capsule_experiments as data
from keras_capsules.datasets import image_transforms

_DATASET = flags.DEFINE_enum("dataset", "mnist", list(data.DATASETS), "Data.")
_CANVAS_SIZE = flags.DEFINE_integer(
    "canvas_size", 40, "Images are centred on a square canvas this large."
)
_TRAIN_SIZE = flags.DEFINE_integer(
    "train_size", None, "Training images (default: the whole split)."
)
_EPOCHS = flags.DEFINE_integer("epochs", 5, "Passes over the training set.")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 64, "Batch size.")
_LEARNING_RATE = flags.DEFINE_float("learning_rate", 1e-3, "Adam's rate.")
_POSE_POSTERIOR = flags.DEFINE_enum(
    "pose_posterior",
    "delta",
    list(models.generative_capsules.POSE_POSTERIORS),
    "Delta (MAP) poses, as in the paper, or Gaussian poses.",
)
_MAX_SHIFT = flags.DEFINE_integer(
    "max_shift",
    0,
    "Training images are shifted by up to this many pixels along each axis, "
    "a new shift every epoch (0: centred, the paper's MNIST training set).",
)
_TOP_KL_WARMUP_STEPS = flags.DEFINE_integer(
    "top_kl_warmup_steps",
    0,
    "Steps over which the top layer's KL weight rises from 0 to 1.",
)
_STOP_GRADIENT = flags.DEFINE_boolean(
    "stop_gradient_between_layers",
    False,
    "The top layer's terms do not train the template encoder (SCAE).",
)
_COORDINATE_CHANNELS = flags.DEFINE_boolean(
    "coordinate_channels",
    False,
    "The template encoder's pooled poses see where their parts were found.",
)
_NORMALIZE_TOP_INPUTS = flags.DEFINE_boolean(
    "normalize_top_encoder_inputs",
    False,
    "Batch-normalise the template capsules the top encoder reads.",
)
_PRESENCE_INFORMATION_WEIGHT = flags.DEFINE_float(
    "presence_information_weight",
    0.0,
    "Adds this multiple of the top presences' information to the bound.",
)
_SELECTION_INFORMATION_WEIGHT = flags.DEFINE_float(
    "selection_information_weight",
    0.0,
    "Adds this multiple of the image's information about which parents "
    "explain its templates to the bound.",
)
_TOP_POSE_REFINEMENT_STEPS = flags.DEFINE_integer(
    "top_pose_refinement_steps",
    3,
    "EM steps from the top encoder's poses toward the poses that best "
    "explain the template poses (0: the encoder's poses, the paper's; 3 "
    "puts the class in the top poses, see the README).",
)
_MIN_POSE_SCALE = flags.DEFINE_float(
    "min_pose_scale", 0.1, "Lower bound of the stds c_ij (paper: 0.1)."
)
_INITIAL_POSE_SCALE = flags.DEFINE_float(
    "initial_pose_scale",
    None,
    "Initial std c_ij of predicted template poses (default 1.5 x "
    "--min_pose_scale).",
)
_TEMPLATE_CHANNELS = flags.DEFINE_integer(
    "template_channels", 32, "Channels of the template encoder's CNN."
)
_TEMPERATURE = flags.DEFINE_float(
    "temperature", 1.0, "Concrete temperature of the relaxed presences."
)
_VAE_EPOCHS = flags.DEFINE_integer(
    "vae_epochs", None, "VAE epochs (default: --epochs); 0 skips the VAE."
)
_PROBE_TRAIN_SIZE = flags.DEFINE_integer(
    "probe_train_size", 10000, "Training images of the linear probes."
)
_PROBE_TEST_SIZE = flags.DEFINE_integer(
    "probe_test_size", 5000, "Test images per probe test set."
)
_PROBE_EPOCHS = flags.DEFINE_integer("probe_epochs", 50, "Probe epochs.")
_ROTATIONS = flags.DEFINE_list(
    "rotations", [str(a) for a in data.PAPER_ROTATIONS], "Test rotations."
)
_FREE_FORM_STEPS = flags.DEFINE_integer(
    "free_form_steps", 100, "Test-time inference steps (0 skips it)."
)
_FREE_FORM_LEARNING_RATE = flags.DEFINE_float(
    "free_form_learning_rate",
    0.005,
    "Adam's rate of test-time inference (poses vary by about 0.1 between "
    "digits).",
)
_FREE_FORM_EXAMPLES = flags.DEFINE_integer(
    "free_form_examples", 500, "Images per test set for test-time inference."
)
_PROBE_PROTOCOL = flags.DEFINE_enum(
    "probe_protocol",
    "both",
    ["upright", "matched", "both"],
    "`upright`: probes learn from the untransformed training images; "
    "`matched`: from training images transformed like each test set.",
)
_EVALUATE_ONLY = flags.DEFINE_boolean(
    "evaluate_only",
    False,
    "Load model.keras (and vae.keras) from --model_dir instead of training.",
)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir", "runs/generative_capsules", "Backups, model, results."
)
_EXPORT_DIR = flags.DEFINE_string("export_dir", None, "SavedModel output.")
_BACKUP_STEPS = flags.DEFINE_integer(
    "backup_steps", 500, "Steps between backups."
)
_STRATEGY = flags.DEFINE_enum(
    "strategy", "default", list(distribution.STRATEGIES), "tf.distribute."
)
_JIT_COMPILE = flags.DEFINE_enum(
    "jit_compile", "true", ["true", "false", "auto"], "XLA."
)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


def training_images(train):
    """The training images as a dataset of shuffled batches, each image
    shifted by up to `--max_shift` pixels (new shifts every epoch)."""
    dataset = tf.data.Dataset.from_tensor_slices(train).shuffle(
        len(train), seed=_SEED.value, reshuffle_each_iteration=True
    )
    dataset = dataset.batch(_BATCH_SIZE.value)
    if _MAX_SHIFT.value:
        canvas = train.shape[1]
        dataset = dataset.map(
            lambda images: image_transforms.random_translate(
                images, canvas, _MAX_SHIFT.value
            )
        )
    return dataset.prefetch(tf.data.AUTOTUNE)


def fit_capsules(train, test, strategy, model_dir):
    with strategy.scope():
        model = models.generative_capsule_autoencoder(
            image_shape=train.shape[1:],
            pose_posterior=_POSE_POSTERIOR.value,
            template_channels=_TEMPLATE_CHANNELS.value,
            coordinate_channels=_COORDINATE_CHANNELS.value,
            normalize_top_encoder_inputs=_NORMALIZE_TOP_INPUTS.value,
            presence_information_weight=_PRESENCE_INFORMATION_WEIGHT.value,
            selection_information_weight=_SELECTION_INFORMATION_WEIGHT.value,
            top_pose_refinement_steps=_TOP_POSE_REFINEMENT_STEPS.value,
            min_pose_scale=_MIN_POSE_SCALE.value,
            initial_pose_scale=_INITIAL_POSE_SCALE.value,
            top_kl_warmup_steps=_TOP_KL_WARMUP_STEPS.value,
            stop_gradient_between_layers=_STOP_GRADIENT.value,
            temperature=_TEMPERATURE.value,
            seed=_SEED.value,
        )
        model.compile(
            optimizer=keras.optimizers.Adam(_LEARNING_RATE.value),
            jit_compile=fitting.use_xla(_JIT_COMPILE.value),
        )
    history = model.fit(
        training_images(train),
        epochs=_EPOCHS.value,
        validation_data=(test,),
        validation_batch_size=500,
        callbacks=[
            keras.callbacks.BackupAndRestore(
                os.path.join(model_dir, "backup"),
                save_freq=_BACKUP_STEPS.value,
            ),
            keras.callbacks.CSVLogger(
                os.path.join(model_dir, "history.csv"), append=True
            ),
            keras.callbacks.ModelCheckpoint(
                os.path.join(model_dir, "model.keras")
            ),
        ],
    )
    return model, history.history


def fit_vae(train, epochs, strategy):
    with strategy.scope():
        vae = models.VariationalAutoencoder(train.shape[1:], seed=_SEED.value)
        vae.build()
        vae.compile(optimizer=keras.optimizers.Adam(1e-3))
    vae.fit(train, batch_size=128, epochs=epochs, verbose=2)
    return vae


def in_batches(function, images, batch_size=500):
    outputs = [
        function(images[start : start + batch_size])
        for start in range(0, len(images), batch_size)
    ]
    return tf.nest.map_structure(
        lambda *parts: np.concatenate([np.asarray(p) for p in parts]),
        *outputs,
    )


def probe(train_features, train_labels, test_features, labels):
    return trainers.linear_probe_accuracy(
        train_features,
        train_labels,
        {name: (test_features[name], labels[name]) for name in test_features},
        epochs=_PROBE_EPOCHS.value,
        seed=_SEED.value,
    )


def free_form_effect(model, probe_images, probe_labels, test_sets):
    """The `t0` and `(t0, A0)` probes on amortised and on
    test-time-inferred latents.

    Each probe learns from `--free_form_examples` training images whose
    latents were inferred the same way as its test sets' (amortised, or
    amortised then refined by `--free_form_steps` steps of the bound).
    """
    count = _FREE_FORM_EXAMPLES.value
    sets = {"train": (probe_images, probe_labels), **test_sets}
    amortised, free_form, labels, bounds = {}, {}, {}, {}
    for name, (images, set_labels) in sets.items():
        images, labels[name] = images[:count], set_labels[:count]
        amortised[name] = models.top_layer_features(model.encode(images))
        latents, history = trainers.free_form_inference(
            model,
            images,
            num_steps=_FREE_FORM_STEPS.value,
            learning_rate=_FREE_FORM_LEARNING_RATE.value,
            seed=_SEED.value,
        )
        free_form[name] = models.top_layer_features(latents)
        bounds[name] = {  # one-sample estimates: average the last 5
            "before": round(history[0], 1),
            "after": round(float(np.mean(history[-5:])), 1),
        }
        print(f"free form {name}: bound {bounds[name]}", flush=True)
    train_labels = labels.pop("train")

    def probe_on(features, kind):
        by_set = {name: value[kind] for name, value in features.items()}
        train = by_set.pop("train")
        return probe(train, train_labels, by_set, labels)

    return {
        **{
            f"{kind}_{way}": probe_on(features, kind)
            for kind in ("t0", "t0_A0")
            for way, features in (
                ("amortised", amortised),
                ("free_form", free_form),
            )
        },
        "bound_per_image": bounds,
        "examples": count,
        "steps": _FREE_FORM_STEPS.value,
        "learning_rate": _FREE_FORM_LEARNING_RATE.value,
    }


def write_figures(model, test_sets, model_dir):
    plots.plot_templates(
        model.decoder, os.path.join(model_dir, "templates.png")
    )
    rotations = [name for name in test_sets if name.startswith("rotated")]
    images = np.stack([test_sets[name][0][0] for name in rotations])
    rows = {"input": images, "amortised": np.asarray(model(images))}
    if _FREE_FORM_STEPS.value:
        latents, _ = trainers.free_form_inference(
            model,
            images,
            num_steps=_FREE_FORM_STEPS.value,
            learning_rate=_FREE_FORM_LEARNING_RATE.value,
            seed=_SEED.value,
        )
        rows["free form"] = np.asarray(
            model.decoder(
                [latents["template_presences"], latents["template_poses"]]
            )
        )
    plots.plot_image_rows(rows, os.path.join(model_dir, "reconstructions.png"))


def export(model, export_dir, image_shape):
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(images):
        return {**model.encode(images), "reconstruction": model(images)}

    archive.add_endpoint(
        "serve",
        serve,
        input_signature=[tf.TensorSpec((None, *image_shape), tf.float32)],
    )
    archive.write_out(export_dir, verbose=False)


def load_or_fit(train, test, strategy, model_dir):
    """The capsule model and its history, and the VAE (or None)."""
    vae_epochs = _VAE_EPOCHS.value
    vae_epochs = _EPOCHS.value if vae_epochs is None else vae_epochs
    if _EVALUATE_ONLY.value:
        model = keras.models.load_model(os.path.join(model_dir, "model.keras"))
        vae_path = os.path.join(model_dir, "vae.keras")
        vae = keras.models.load_model(vae_path) if vae_epochs else None
        return model, {}, vae, 0.0
    start = time.time()
    model, history = fit_capsules(train, test, strategy, model_dir)
    seconds = time.time() - start
    print("bound per epoch:", [round(v, 1) for v in history["elbo"]])
    vae = None
    if vae_epochs:
        vae = fit_vae(train, vae_epochs, strategy)
        vae.save(os.path.join(model_dir, "vae.keras"))
    return model, history, vae, seconds


def probe_table(model, vae, probe_sets, test_sets):
    """Probe accuracies `{kind: {test set: accuracy}}` for one protocol:
    `probe_sets` maps every test set to the probe's training images."""

    def encode_all(images):
        return models.top_layer_features(in_batches(model.encode, images))

    def vae_features(images):
        mean, std = in_batches(vae.encode, images)
        return np.concatenate([mean, std], 1)

    table = {"t0": {}, "t0_A0": {}, **({"vae": {}} if vae is not None else {})}
    cache = {}
    for name, (test_images, test_labels) in test_sets.items():
        train_images, train_labels = probe_sets[name]
        key = id(train_images)
        if key not in cache:
            cache[key] = (
                encode_all(train_images),
                (vae_features(train_images) if vae else None),
            )
        train_capsules, train_vae = cache[key]
        test_capsules = encode_all(test_images)
        for kind in ("t0", "t0_A0"):
            table[kind][name] = probe(
                train_capsules[kind],
                train_labels,
                {name: test_capsules[kind]},
                {name: test_labels},
            )[name]
        if vae is not None:
            table["vae"][name] = probe(
                train_vae,
                train_labels,
                {name: vae_features(test_images)},
                {name: test_labels},
            )[name]
    return table


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    keras.utils.set_random_seed(_SEED.value)
    model_dir = _MODEL_DIR.value
    os.makedirs(model_dir, exist_ok=True)
    strategy = distribution.make_strategy(_STRATEGY.value)
    canvas = _CANVAS_SIZE.value
    dataset = _DATASET.value
    rotations = [float(a) for a in _ROTATIONS.value]
    train, train_labels = data.load_images(
        dataset, "train", _TRAIN_SIZE.value, canvas, _SEED.value
    )
    raw_test, test_labels = data.load_images(
        dataset, "test", _PROBE_TEST_SIZE.value, None, _SEED.value
    )
    test_sets = data.probe_test_sets(raw_test, test_labels, canvas, rotations)
    model, history, vae, train_seconds = load_or_fit(
        train, test_sets[next(iter(test_sets))][0], strategy, model_dir
    )
    probe_size = _PROBE_TRAIN_SIZE.value
    probe_images, probe_labels = train[:probe_size], train_labels[:probe_size]
    results = {
        "dataset": dataset,
        "canvas_size": canvas,
        "epochs": _EPOCHS.value,
        "train_images": len(train),
        "train_seconds": round(train_seconds, 1),
        "pose_posterior": model.pose_posterior,
        "parameters": {
            "decoder": model.decoder.count_params(),
            "template_encoder": model.template_encoder.count_params(),
            "top_encoder": model.top_encoder.count_params(),
        },
        "history": {k: [float(v) for v in vs] for k, vs in history.items()},
        "probe": {},
    }
    protocols = {
        "upright": {name: (probe_images, probe_labels) for name in test_sets}
    }
    if _PROBE_PROTOCOL.value != "upright":
        raw_probe, raw_probe_labels = data.load_images(
            dataset, "train", probe_size, None, _SEED.value
        )
        protocols["matched"] = data.probe_test_sets(
            raw_probe, raw_probe_labels, canvas, rotations, seed=_SEED.value + 1
        )
        if _PROBE_PROTOCOL.value == "matched":
            del protocols["upright"]
    for protocol, probe_sets in protocols.items():
        results["probe"][protocol] = probe_table(
            model, vae, probe_sets, test_sets
        )
        print(f"probes ({protocol}): {results['probe'][protocol]}", flush=True)
    if _FREE_FORM_STEPS.value:
        results["free_form"] = free_form_effect(
            model, probe_images, probe_labels, test_sets
        )
        print(f"free form: {results['free_form']}", flush=True)
    write_figures(model, test_sets, model_dir)
    model.save(os.path.join(model_dir, "model.keras"))
    if _EXPORT_DIR.value:
        export(model, _EXPORT_DIR.value, train.shape[1:])
    name = "evaluation.json" if _EVALUATE_ONLY.value else "results.json"
    with open(os.path.join(model_dir, name), "w") as file:
        json.dump(results, file, indent=1)
    print(json.dumps({k: v for k, v in results.items() if k != "history"}))


if __name__ == "__main__":
    app.run(main)
