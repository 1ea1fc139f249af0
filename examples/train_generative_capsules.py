"""Trains the generative capsule model of Smith, Schut, Gal and van der Wilk
(2020) without labels, then measures its latent variables with linear
probes (Table 1).

1. Fits the model (16 top capsules, 16 templates of 12x12, amortised
   CNN + set-transformer encoders) by its bound on the training images,
   centred on a `--canvas_size` canvas (or shifted by up to
   `--max_shift` pixels). The bound's history per epoch is printed and
   written to `history.csv`, with what the top layer carries
   (`top_information` and its parts; research/generative_capsules.md,
   "Is the top layer used?").
   `--preset` names the model's settings
   (`models.GenerativeCapsuleConfig.PRESETS`; by default
   `computed_top_poses`, the paper's model with its top poses computed
   by 3 EM steps, docs/guides/generative-capsules.md).
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
   bound (the paper's gradient ascent on free variational parameters,
   `trainers.FreeFormInference`), and the bound before and after.
5. Figures: templates, and rotated test digits over their amortised and
   free-form reconstructions (Figure 3).

`--model_dir` holds a backup that resumes an interrupted run, the model
(`model.keras`), the VAE, `history.csv`, `results.json` (the schema of
`examples/runs.py`, the test images' bound as `evaluation`, with
`parameters_by_part`, `probe` and `free_form`) and the figures;
`--evaluate_only` reloads them and writes `evaluation.json` instead (with
`--preset` given, the reloaded model computes its top layer as the preset
does; `model.keras` is left as trained; `evaluated_model` holds the
configuration of the model evaluated, which `--preset` need not
describe);
`--export_dir` writes a SavedModel whose `serve` signature maps images to
their latent variables and reconstruction.

Usage:
  python -m examples.train_generative_capsules --dataset=mnist \
      --epochs=5 --model_dir=runs/generative_mnist
"""

import os

import keras
import tensorflow as tf
from absl import app, flags

from examples import (
    generative_evaluation,
    generative_training,
    run_flags,
    run_results,
    runs,
)
from keras_capsules import models
from keras_capsules.datasets import generative_capsule_experiments as data

# The run-level flags `runs.fit` reads, and the others this script does.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)
_DATASET, _TRAIN_SIZE, _EXPORT_DIR, _FIGURES = run_flags.request(
    __name__, "dataset", "train_size", "export_dir", "figures"
)

# The script's defaults of the flags of `examples/runs.py` and
# `examples/generative_training.py`.
DEFAULTS = {
    "dataset": "mnist",
    "epochs": 5,
    "batch_size": 64,
    "learning_rate": 1e-3,
    "jit_compile": "true",
    "preset": "computed_top_poses",
}

_VAE_EPOCHS = flags.DEFINE_integer(
    "vae_epochs", None, "VAE epochs (default: --epochs); 0 skips the VAE."
)
_PROBE_TRAIN_SIZE = flags.DEFINE_integer(
    "probe_train_size", 10000, "Training images of the linear probes."
)
_PROBE_TEST_SIZE = flags.DEFINE_integer(
    "probe_test_size", 5000, "Test images per probe test set."
)
_ROTATIONS = flags.DEFINE_list(
    "rotations", [str(a) for a in data.PAPER_ROTATIONS], "Test rotations."
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


def fit_capsules(train, test, strategy):
    """Fits the capsule model by its bound; returns it and the training
    entries of the results."""
    with strategy.scope():
        model = generative_training.build_model(train.shape[1:])
    batch_size = _BATCH_SIZE.value
    training = runs.fit(
        model,
        generative_training.training_images(train),
        "model.keras",
        len(train) // batch_size * batch_size,
        extra_callbacks=[
            keras.callbacks.CSVLogger(
                os.path.join(runs.MODEL_DIR.value, "history.csv"), append=True
            )
        ],
        validation_data=generative_training.test_images(test),
    )
    print(
        "bound per epoch:", [round(v, 1) for v in training["history"]["elbo"]]
    )
    return model, training


def fit_vae(train, epochs, strategy):
    with strategy.scope():
        vae = models.VariationalAutoencoder(
            train.shape[1:], seed=runs.SEED.value
        )
        vae.build()
        vae.compile(optimizer=keras.optimizers.Adam(1e-3))
    vae.fit(train, batch_size=128, epochs=epochs, verbose=2)
    return vae


def latents_and_reconstruction(model, images):
    """The serving outputs: the latent variables and the reconstruction."""
    return {**model.encode(images), "reconstruction": model(images)}


def load_or_fit(train, test, strategy):
    """The capsule model, the training entries of the results and the
    VAE (or None)."""
    model_dir = runs.MODEL_DIR.value
    vae_epochs = _VAE_EPOCHS.value
    vae_epochs = _EPOCHS.value if vae_epochs is None else vae_epochs
    if _EVALUATE_ONLY.value:
        model = keras.models.load_model(os.path.join(model_dir, "model.keras"))
        given = generative_training.apply_inference_flags(model)
        if given:
            print("evaluating with", given, flush=True)
        vae_path = os.path.join(model_dir, "vae.keras")
        vae = keras.models.load_model(vae_path) if vae_epochs else None
        return model, {}, vae
    model, training = fit_capsules(train, test, strategy)
    vae = None
    if vae_epochs:
        vae = fit_vae(train, vae_epochs, strategy)
        vae.save(os.path.join(model_dir, "vae.keras"))
    return model, training, vae


def evaluated_model(model):
    """With `--evaluate_only`, `{"evaluated_model": ...}`: the file and the
    configuration of the model evaluated (after `--preset`'s inference
    fields), which `--preset` need not describe; otherwise `{}`."""
    if not _EVALUATE_ONLY.value:
        return {}
    return {
        "evaluated_model": {
            "file": "model.keras",
            "config": model.get_config(),
        }
    }


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    strategy = runs.set_up(**DEFAULTS)
    dataset = runs.choice(_DATASET, data.DATASETS)
    model_dir = runs.MODEL_DIR.value
    canvas = generative_training.CANVAS_SIZE.value
    seed = runs.SEED.value
    rotations = [float(a) for a in _ROTATIONS.value]
    train, train_labels = data.load_images(
        dataset, "train", _TRAIN_SIZE.value, canvas, seed
    )
    raw_test, test_labels = data.load_images(
        dataset, "test", _PROBE_TEST_SIZE.value, None, seed
    )
    test_sets = data.probe_test_sets(raw_test, test_labels, canvas, rotations)
    test = test_sets[next(iter(test_sets))][0]
    model, training, vae = load_or_fit(train, test, strategy)
    probe_size = _PROBE_TRAIN_SIZE.value
    probe_images, probe_labels = train[:probe_size], train_labels[:probe_size]
    results = {
        **run_results.describe_run(main, dataset, model.count_params()),
        "parameters_by_part": {
            "decoder": model.decoder.count_params(),
            "template_encoder": model.template_encoder.count_params(),
            "top_encoder": model.top_encoder.count_params(),
        },
        **training,
        **evaluated_model(model),
        "evaluation": run_results.evaluate(
            model, {"test": generative_training.test_images(test)}
        ),
        "probe": {},
    }
    protocols = {
        "upright": {name: (probe_images, probe_labels) for name in test_sets}
    }
    if _PROBE_PROTOCOL.value != "upright":
        raw_probe, raw_probe_labels = data.load_images(
            dataset, "train", probe_size, None, seed
        )
        protocols["matched"] = data.probe_test_sets(
            raw_probe, raw_probe_labels, canvas, rotations, seed=seed + 1
        )
        if _PROBE_PROTOCOL.value == "matched":
            del protocols["upright"]
    for protocol, probe_sets in protocols.items():
        results["probe"][protocol] = generative_evaluation.probe_table(
            model, vae, probe_sets, test_sets
        )
        print(f"probes ({protocol}): {results['probe'][protocol]}", flush=True)
    if generative_evaluation.FREE_FORM_STEPS.value:
        results["free_form"] = generative_evaluation.free_form_effect(
            model, probe_images, probe_labels, test_sets
        )
        print(f"free form: {results['free_form']}", flush=True)
    if _FIGURES.value:
        generative_evaluation.write_figures(model, test_sets, model_dir)
    if not _EVALUATE_ONLY.value:  # An evaluation leaves the trained model.
        model.save(os.path.join(model_dir, "model.keras"))
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        tf.TensorSpec((None, *train.shape[1:]), tf.float32, "images"),
        serve=lambda images: latents_and_reconstruction(model, images),
    )
    run_results.write_results(
        results,
        "evaluation.json" if _EVALUATE_ONLY.value else "results.json",
    )


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
