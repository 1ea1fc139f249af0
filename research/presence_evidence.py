"""How much of the class the top layer's presences could carry, and what
the bound pays for it (README, "Is the top layer used?").

A parent's single-parent evidence is what the template layer's density
gains when that parent alone is present rather than none,

    e_i = log p(t1, A1 | t0 = one_hot(i), A0) - log p(t1, A1 | t0 = 0, A0),

which is what one mean-field step from the all-absent state adds to the
prior's logit (`distributions.parent_presence_logits` with every
presence 0). The script moves the top layer's presence logits along

    logit_i = logit(p_i) + w (e_i - mean_j e_j):

`w = 0` keeps every presence at the prior, a larger `w` lets the
presences follow the evidence. For each weight, and for the model's own
presences, it prints one JSON line with the bound on test digits (nats
per image, the same draws for every row), the bound of the model with
Bernoulli top-layer presences (`distributions.binary_top_elbo`, which
the relaxed bound approximates; its expectation over `t0` from
`--evidence_binary_draws` draws), the presences' information
(`distributions.layer_information`), the mean number of parents with
`q(t0 = 1) > 0.5`, and a linear probe on the presence logits, as in the
README's tables. The top poses are the model's own in every row. A last
row, `single_parent`, makes the presences certain: each digit's parent
of highest evidence alone present, as if each parent stood for one kind
of digit.

Usage:
  python -m research.presence_evidence \
      --model_path=runs/gen32_6ep/model.keras \
      --evidence_weights=0,0.003,0.01,0.03,0.1 \
      --evidence_output=research/results/generative_capsules_presence_evidence.jsonl
"""

import json

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from examples import generative_training, runs
from keras_capsules import distributions
from keras_capsules.datasets import generative_capsule_experiments as data

_MODEL_PATH = flags.DEFINE_string(
    "model_path", None, "The trained generative capsule model (`.keras`)."
)
_WEIGHTS = flags.DEFINE_list(
    "evidence_weights",
    ["0", "0.003", "0.01", "0.03", "0.1"],
    "The weights `w` of the evidence in the presence logits.",
)
_TRAIN_DIGITS = flags.DEFINE_integer(
    "evidence_train_digits", 10000, "Training digits the probe learns from."
)
_TEST_DIGITS = flags.DEFINE_integer(
    "evidence_test_digits",
    2000,
    "Test digits: the bound and the probe's test.",
)
_BINARY_DRAWS = flags.DEFINE_integer(
    "evidence_binary_draws",
    16,
    "Draws of the top layer's Bernoulli presences per test digit in the "
    "unrelaxed bound.",
)
_OUTPUT = flags.DEFINE_string(
    "evidence_output", None, "JSON lines file to append to."
)

_BATCH_SIZE = 250
SINGLE_PARENT = "single_parent"
# Presence logits of a certain parent: q(t0 = 1) = 1 - 1e-13.
_CERTAIN_LOGIT = 30.0


def evidence_posterior_fn(model, weight):
    """The top posterior of a template-layer event, with its presence
    logits moved to `logit(p) + weight (e - mean e)` (the model's own when
    `weight` is None; the parent of highest `e` alone, certainly, when it
    is `SINGLE_PARENT`)."""
    generative = model.decoder.generative_model()

    def top_posterior(templates):
        posterior = model.top_posterior(templates)
        if weight is None:
            return posterior
        prior = tf.cast(generative.top_presence_logits, tf.float32)
        absent = tf.zeros_like(posterior.presence_logits)
        evidence = (
            distributions.parent_presence_logits(
                generative, absent, posterior.pose_means, templates
            )
            - prior
        )
        if weight == SINGLE_PARENT:
            best = tf.one_hot(tf.argmax(evidence, -1), evidence.shape[-1])
            posterior.presence_logits = _CERTAIN_LOGIT * (2.0 * best - 1.0)
            return posterior
        evidence -= tf.reduce_mean(evidence, axis=-1, keepdims=True)
        posterior.presence_logits = prior + weight * evidence
        return posterior

    return top_posterior


def presence_logits(model, top_posterior, images):
    """`(n, n0)` presence logits of `images`' top posteriors, from the
    template layer's modes (as `encode`)."""
    return np.concatenate(
        [
            np.asarray(
                top_posterior(
                    model.template_posterior(
                        images[start : start + _BATCH_SIZE]
                    ).mode()
                ).presence_logits
            )
            for start in range(0, len(images), _BATCH_SIZE)
        ]
    )


def mean_bound(model, top_posterior, images, seed, binary_draws=None):
    """The one-sample bound of `images`, nats per image; batch `k` draws
    with seed `(seed, k)` whatever the presences. With `binary_draws`,
    the bound with Bernoulli top-layer presences, its expectation over
    them from that many draws."""
    generative = model.decoder.generative_model()
    bounds = []
    for index, start in enumerate(range(0, len(images), _BATCH_SIZE)):
        batch = images[start : start + _BATCH_SIZE]
        arguments = (
            generative,
            tf.convert_to_tensor(batch),
            model.template_posterior(batch),
            top_posterior,
            tf.constant([seed, index], tf.int32),
        )
        if binary_draws is None:
            terms = distributions.capsule_elbo(*arguments)
        else:
            terms = distributions.binary_top_elbo(
                *arguments, num_draws=binary_draws
            )
        bounds.append(np.asarray(terms["elbo"]))
    return float(np.mean(np.concatenate(bounds)))


def evaluate(model, weight, probe_set, test_set, seed, binary_draws):
    """One row: the two bounds, the presences' information and the probe
    for the presences of `weight` (None: the model's own)."""
    top_posterior = evidence_posterior_fn(model, weight)
    train_images, train_labels = probe_set
    test_images, test_labels = test_set
    train_logits = presence_logits(model, top_posterior, train_images)
    test_logits = presence_logits(model, top_posterior, test_images)
    information, probe = generative_training.presence_report(
        train_logits, train_labels, test_logits, test_labels, seed=seed
    )
    return {
        "evidence_weight": "own" if weight is None else weight,
        "bound": round(mean_bound(model, top_posterior, test_images, seed), 2),
        "binary_bound": round(
            mean_bound(model, top_posterior, test_images, seed, binary_draws),
            2,
        ),
        "presence_information": round(float(information), 3) + 0.0,  # No -0.
        "present": round(float((test_logits > 0).sum(axis=1).mean()), 2),
        "probe_t0": round(probe, 4),
    }


def main(argv):
    del argv
    if _MODEL_PATH.value is None:
        raise app.UsageError(
            "Give `--model_path`, a `.keras` file saved by "
            "`examples.train_generative_capsules` or "
            "`research.generative_capsules_ablations --save_to`."
        )
    seed = runs.SEED.value
    model = keras.models.load_model(_MODEL_PATH.value)
    canvas = model.decoder.image_shape[0]
    probe_set = data.load_images(
        "mnist", "train", _TRAIN_DIGITS.value, canvas, seed
    )
    test_set = data.load_images(
        "mnist", "test", _TEST_DIGITS.value, canvas, seed
    )
    weights = [
        None,
        *(float(weight) for weight in _WEIGHTS.value),
        SINGLE_PARENT,
    ]
    for weight in weights:
        row = {
            "model": _MODEL_PATH.value,
            **evaluate(
                model, weight, probe_set, test_set, seed, _BINARY_DRAWS.value
            ),
            "probe_train_size": _TRAIN_DIGITS.value,
            "test_size": _TEST_DIGITS.value,
        }
        line = json.dumps(row)
        print(line, flush=True)
        if _OUTPUT.value:
            with open(_OUTPUT.value, "a") as file:
                file.write(line + "\n")


if __name__ == "__main__":
    app.run(main)
