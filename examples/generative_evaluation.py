"""What `train_generative_capsules` measures of a trained generative
capsule model: linear probes on its latents (and a VAE's), test-time
("free form") inference and its effect on them, and the figures."""

import os

import numpy as np
from absl import flags

from examples import generative_training, runs
from keras_capsules import models, plots, trainers

_PROBE_EPOCHS = flags.DEFINE_integer("probe_epochs", 50, "Probe epochs.")
FREE_FORM_STEPS = flags.DEFINE_integer(
    "free_form_steps", 100, "Test-time inference steps (0 skips it)."
)
_FREE_FORM_EXAMPLES = flags.DEFINE_integer(
    "free_form_examples", 500, "Images per test set for test-time inference."
)


def probe(train_features, train_labels, test_features, labels):
    return trainers.linear_probe_accuracy(
        train_features,
        train_labels,
        {name: (test_features[name], labels[name]) for name in test_features},
        epochs=_PROBE_EPOCHS.value,
        seed=runs.SEED.value,
    )


def free_form_inference(model):
    """The paper's test-time inference (`trainers.FreeFormInference`):
    `--free_form_steps` steps of gradient ascent on every variational
    parameter, each step compiled as `--jit_compile` says. Called on
    images, it returns their latents and the bound per step; it compiles
    its step once per batch shape."""
    return trainers.FreeFormInference(
        model,
        num_steps=FREE_FORM_STEPS.value,
        seed=runs.SEED.value,
        jit_compile=runs.use_xla(),
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
    infer = free_form_inference(model)  # One step for sets of one size.
    for name, (images, set_labels) in sets.items():
        images, labels[name] = images[:count], set_labels[:count]
        amortised[name] = models.top_layer_features(model.encode(images))
        latents, history = infer(images)
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
        "steps": FREE_FORM_STEPS.value,
        "learning_rate": trainers.FREE_FORM_LEARNING_RATES["gradient_ascent"],
    }


def write_figures(model, test_sets, model_dir):
    plots.plot_templates(
        model.decoder, os.path.join(model_dir, "templates.png")
    )
    rotations = [name for name in test_sets if name.startswith("rotated")]
    images = np.stack([test_sets[name][0][0] for name in rotations])
    rows = {"input": images, "amortised": np.asarray(model(images))}
    if FREE_FORM_STEPS.value:
        latents, _ = free_form_inference(model)(images)
        rows["free form"] = np.asarray(
            model.decoder(
                [latents["template_presences"], latents["template_poses"]]
            )
        )
    plots.plot_image_rows(rows, os.path.join(model_dir, "reconstructions.png"))


def probe_table(model, vae, probe_sets, test_sets):
    """Probe accuracies `{kind: {test set: accuracy}}` for one protocol:
    `probe_sets` maps every test set to the probe's training images. Test
    sets that share training images share one probe of each kind (the
    upright protocol: one probe instead of one per test set)."""

    def features(images):
        found = generative_training.top_features(model, images)
        if vae is not None:
            mean, std = generative_training.in_batches(vae.encode, images)
            found["vae"] = np.concatenate([mean, std], 1)
        return found

    kinds = ("t0", "t0_A0", *(("vae",) if vae is not None else ()))
    table = {kind: {} for kind in kinds}
    groups = {}  # id of the training images: names of their test sets
    for name in test_sets:
        groups.setdefault(id(probe_sets[name][0]), []).append(name)
    for names in groups.values():
        train_images, train_labels = probe_sets[names[0]]
        train = features(train_images)
        test = {name: features(test_sets[name][0]) for name in names}
        labels = {name: test_sets[name][1] for name in names}
        for kind in kinds:
            by_set = {name: test[name][kind] for name in names}
            accuracies = probe(train[kind], train_labels, by_set, labels)
            for name in names:
                table[kind][name] = accuracies[name]
    return table
