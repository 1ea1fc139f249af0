"""Is it the bound or the training that keeps the top capsules from
standing for digits? (README, "Is the top layer used?")

The script trains the generative capsule model with its top layer's
presences given rather than inferred, then asks the trained model, and
optionally a freely trained one, what the bound says about presences
that stand for the class. `--given_presences` picks the presences used
in training:

- `class`, an oracle that reads the labels: parent `k` is certainly
  present in digits of class `k`, every other parent certainly absent.
- `best_single`, without labels: each digit's single parent that
  explains its template layer best, alone certainly present (hard EM on
  the top layer's presences). For each parent `i` alone,

      score_i = log p(t1, A1 | t0 = e_i, A0_i) + log p(t0 = e_i, A0_i)

  with `A0_i` by the preset's `top_pose_refinement_steps` EM steps from the top
  encoder's poses (`distributions.single_parent_choices`); the presences
  and poses are variational parameters, so the bound stays a bound.
  Chosen freely, one parent soon wins every digit (it is trained on all
  of them and so fits all of them best); with
  `--equipartition_temperature` T > 0 each training batch's choices are
  balanced across the parents instead: the argmax of the assignment
  whose image marginals are uniform and parent marginals equal that is
  closest to `softmax(score / T)` (`distributions.balanced_assignments`,
  the balancing of SwAV, Caron et al. 2020). Test digits always take
  the plain argmax. (The model's `top_posterior_family="single_parent"`
  is the soft version: it trains on the balanced assignment itself and
  infers the exact posterior.)

In both, the top poses are computed by EM steps for the given presences,
and the model trains on its own (relaxed) bound, `model.bound`. A presence
given as certain costs `|logit|`-sized nats in the relaxed bound's
Concrete KL (which only moves the prior `p`), so every bound the
script reports is the one with Bernoulli top presences
(`distributions.binary_top_elbo`, 16 draws per test digit), whose
presence KL is exact. For the trained model, and for
`--class_parents_free_model` when given, it prints one JSON line with
that bound on the test digits for four choices of presences: the
model's own inference (`own`: the top encoder's, with the options it
was built with), the oracle's (`class`), each digit's parent of highest
single-parent evidence at the model's own poses (`evidence_single`, as
`research.presence_evidence`) and its best single parent
(`best_single`, unbalanced); and, for the trained model, which parent
each test digit's given presences choose, the single-parent report of
`research.generative_capsules_ablations`, and linear probes on `t0` and
`(t0, A0)` of the model's own inference and on the `(n, n0)` scores
`score_i` (`choice_scores`).

Usage:
  python -m research.class_parents \
      --preset=computed_top_poses:top_presence_refinement_steps=1 \
      --class_parents_free_model=runs/ablation_16_2ep/model.keras \
      --class_parents_output=research/results/generative_capsules_class_parents.jsonl
  python -m research.class_parents --given_presences=best_single \
      --equipartition_temperature=1 --preset=computed_top_poses

(Its runs in research/generative_capsules.md that trained on the
Bernoulli bound, `--binary_top_presence_draws`, ran at commit e2935bd.)
"""

import json
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from examples import generative_training, run_flags, runs
from keras_capsules import distributions, trainers
from keras_capsules.datasets import epoch_order
from keras_capsules.datasets import generative_capsule_experiments as data
from research import generative_capsules_ablations, presence_evidence

# The run-level flags `runs.fit` reads.
_EPOCHS, _TRAIN_BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)
_TRAIN_SIZE, _TEST_SIZE = run_flags.request(__name__, "train_size", "test_size")

CLASS = "class"
BEST_SINGLE = "best_single"

_GIVEN = flags.DEFINE_enum(
    "given_presences",
    CLASS,
    [CLASS, BEST_SINGLE],
    "The top presences the model trains with: the digit's class (an "
    "oracle) or its best single parent.",
)
_EQUIPARTITION = flags.DEFINE_float(
    "equipartition_temperature",
    0.0,
    "With `--given_presences=best_single`, the temperature (nats) of the "
    "balancing of each training batch's choices across parents; 0: none.",
)
_FREE_MODEL = flags.DEFINE_string(
    "class_parents_free_model",
    None,
    "A freely trained model (`.keras`) to evaluate beside, if set.",
)
_SAVE_TO = flags.DEFINE_string(
    "class_parents_save_to", None, "Where to save the trained model."
)
_OUTPUT = flags.DEFINE_string(
    "class_parents_output", None, "JSON lines file to append to."
)

# Presence logits of a certain presence: q(t0 = 1) = 1 - 1e-13.
_CERTAIN_LOGIT = distributions.CERTAIN_RELAXED_LOGIT
_BATCH_SIZE = 250
_BINARY_DRAWS = 16


def _certain(presences):
    return _CERTAIN_LOGIT * (2.0 * presences - 1.0)


def _encoder_posterior(model, templates):
    return model.posterior_from_parameters(
        model.top_encoder(model.template_capsules(templates))
    )


def class_posterior_fn(model, labels):
    """The top posterior of a template-layer event with parent `labels`
    (an int `(batch,)`) certainly present, every other certainly absent,
    the poses by `model.config.top_pose_refinement_steps` EM steps from the top
    encoder's."""

    def top_posterior(templates):
        posterior = _encoder_posterior(model, templates)
        num_parents = posterior.presence_logits.shape[-1]
        posterior.presence_logits = _certain(tf.one_hot(labels, num_parents))
        posterior.pose_means = distributions.refine_parent_poses(
            model.decoder.generative_model(),
            posterior.mode(),
            templates,
            max(model.config.top_pose_refinement_steps, 1),
        )
        return posterior

    return top_posterior


def single_parent_choices(model, templates):
    """`(scores, poses)`: `(batch, n0)` scores of each parent alone
    present (the module docstring's `score_i`, nats) and `(batch, n0,
    n0, 6)` the top poses with parent `i` alone present (row `i`)."""
    return distributions.single_parent_choices(
        model.decoder.generative_model(),
        _encoder_posterior(model, templates).pose_means,
        templates,
        max(model.config.top_pose_refinement_steps, 1),
    )


def best_single_posterior_fn(model, equipartition_temperature=0.0):
    """The top posterior of a template-layer event with its best single
    parent (`single_parent_choices`) certainly present and every other
    certainly absent, the poses those of that parent alone; with
    `equipartition_temperature` > 0, the choices balanced across the
    batch's images first (`distributions.balanced_assignments`)."""

    def top_posterior(templates):
        scores, poses = single_parent_choices(model, templates)
        choice = tf.stop_gradient(scores)
        if equipartition_temperature:
            choice = distributions.balanced_assignments(
                choice, equipartition_temperature
            )
        best = tf.argmax(choice, -1)
        posterior = _encoder_posterior(model, templates)
        posterior.presence_logits = _certain(tf.one_hot(best, scores.shape[-1]))
        posterior.pose_means = tf.gather(poses, best, batch_dims=1)
        return posterior

    return top_posterior


def given_posterior_fn(model, given, labels, equipartition_temperature=0.0):
    """The top posterior function of `--given_presences` `given` (`CLASS`
    reads `labels`, `BEST_SINGLE` ignores them)."""
    if given == CLASS:
        return class_posterior_fn(model, labels)
    return best_single_posterior_fn(model, equipartition_temperature)


def train(model, images, labels, given):
    """`--epochs` of `model.bound` with the `given` top presences, Adam at
    `--learning_rate`, batches of `--batch_size` in `--seed`'s order;
    the mean training bound of each epoch."""
    optimizer = model.optimizer
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=runs.use_xla())
    def step(batch_images, batch_labels, seed):
        with tf.GradientTape() as tape:
            terms = model.bound(
                batch_images,
                model.template_posterior(batch_images, training=True),
                given_posterior_fn(
                    model, given, batch_labels, _EQUIPARTITION.value
                ),
                seed,
            )
            loss = -tf.reduce_mean(terms["elbo"])
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss

    batches = epoch_order.epoch_batches(
        (images, labels.astype(np.int32)),
        _TRAIN_BATCH_SIZE.value,
        runs.SEED.value,
        drop_remainder=True,
    )
    bounds = []
    progress = keras.utils.Progbar(_EPOCHS.value, unit_name="epoch")
    for epoch in range(_EPOCHS.value):
        losses = [
            float(step(x, y, tf.constant([epoch, index], tf.int32)))
            for index, (_, (x, y)) in enumerate(batches(epoch))
        ]
        bounds.append(round(-float(np.mean(losses)), 2))
        progress.update(epoch + 1, [("bound", bounds[-1])])
    return bounds


def bernoulli_bounds(model, images, labels, seed):
    """`{presences: {term: nats per image}}`: `distributions.binary_top_elbo`
    of `images` with the model's own top presences, the class oracle's,
    the parent of highest evidence alone, and the best single parent
    (`best_single_posterior_fn`, unbalanced); batch `k` draws with seed
    `(seed, k)` in every row."""
    choices = {
        "own": lambda batch_labels: (
            lambda templates: model.top_posterior(templates)
        ),
        CLASS: lambda batch_labels: class_posterior_fn(model, batch_labels),
        "evidence_single": lambda batch_labels: (
            presence_evidence.evidence_posterior_fn(
                model, presence_evidence.SINGLE_PARENT
            )
        ),
        BEST_SINGLE: lambda batch_labels: best_single_posterior_fn(model),
    }
    generative = model.decoder.generative_model()
    report = {}
    for name, posterior_fn_of in choices.items():
        terms = {}
        for index, start in enumerate(range(0, len(images), _BATCH_SIZE)):
            batch = tf.convert_to_tensor(images[start : start + _BATCH_SIZE])
            batch_terms = distributions.binary_top_elbo(
                generative,
                batch,
                model.template_posterior(batch),
                posterior_fn_of(labels[start : start + _BATCH_SIZE]),
                tf.constant([seed, index], tf.int32),
                num_draws=_BINARY_DRAWS,
            )
            for key in ("elbo", "reconstruction", "template_kl", "top_kl"):
                terms.setdefault(key, []).append(np.asarray(batch_terms[key]))
        report[name] = {
            key: round(float(np.mean(np.concatenate(values))), 2)
            for key, values in terms.items()
        }
    return report


def choice_scores(model, images):
    """`(n, n0)` `single_parent_choices` scores of `images`."""
    return np.concatenate(
        [
            np.asarray(
                single_parent_choices(
                    model,
                    model.template_posterior(
                        images[start : start + _BATCH_SIZE]
                    ).mode(),
                )[0]
            )
            for start in range(0, len(images), _BATCH_SIZE)
        ]
    )


def chosen_parents(model, images, labels, given):
    """Which parent the `given` choice makes present in each of `images`:
    `counts` `(classes, n0)` and `class_purity` (the share of images
    whose parent's most common class is their own)."""
    chosen = []
    for start in range(0, len(images), _BATCH_SIZE):
        templates = model.template_posterior(
            images[start : start + _BATCH_SIZE]
        ).mode()
        posterior = given_posterior_fn(
            model, given, labels[start : start + _BATCH_SIZE]
        )(templates)
        chosen.append(np.argmax(np.asarray(posterior.presence_logits), -1))
    counts = generative_capsules_ablations.class_counts(
        labels, np.concatenate(chosen), posterior.presence_logits.shape[-1]
    )
    return {
        "counts": counts.tolist(),
        "class_purity": generative_capsules_ablations.class_purity(counts),
    }


def main(argv):
    del argv
    runs.set_defaults(**generative_capsules_ablations.DEFAULTS)
    keras.utils.set_random_seed(runs.SEED.value)
    canvas = generative_training.CANVAS_SIZE.value
    train_images, train_labels = data.load_images(
        "mnist", "train", _TRAIN_SIZE.value, canvas, runs.SEED.value
    )
    test_images, test_labels = data.load_images(
        "mnist", "test", _TEST_SIZE.value, canvas, runs.SEED.value
    )
    model = generative_training.build_model(train_images.shape[1:])
    start = time.time()
    train_bounds = train(model, train_images, train_labels, _GIVEN.value)
    seconds = time.time() - start
    if _SAVE_TO.value:
        os.makedirs(os.path.dirname(_SAVE_TO.value) or ".", exist_ok=True)
        model.save(_SAVE_TO.value)
    seed = runs.SEED.value
    probe_size = min(5000, len(train_images))
    train_features = generative_training.top_features(
        model, train_images[:probe_size]
    )
    test_features = generative_training.top_features(model, test_images)
    train_features["single_parent_scores"] = choice_scores(
        model, train_images[:probe_size]
    )
    test_features["single_parent_scores"] = choice_scores(model, test_images)
    result = {
        "given_presences": _GIVEN.value,
        "equipartition_temperature": _EQUIPARTITION.value,
        "secs": round(seconds),
        "train_bound": train_bounds,
        "test_bound": bernoulli_bounds(model, test_images, test_labels, seed),
        "chosen": chosen_parents(model, test_images, test_labels, _GIVEN.value),
        "single_parent": generative_capsules_ablations.single_parent_report(
            model, test_images[:1000], test_labels[:1000]
        ),
        "probe": {
            kind: round(
                trainers.linear_probe_accuracy(
                    train_features[kind],
                    train_labels[:probe_size],
                    {"test": (test_features[kind], test_labels)},
                    epochs=30,
                )["test"],
                3,
            )
            for kind in ("t0", "t0_A0", "single_parent_scores")
        },
    }
    if _FREE_MODEL.value:
        free = keras.models.load_model(_FREE_MODEL.value)
        result["free_model"] = _FREE_MODEL.value
        result["free_test_bound"] = bernoulli_bounds(
            free, test_images, test_labels, seed
        )
    line = json.dumps(result)
    print(line, flush=True)
    if _OUTPUT.value:
        with open(_OUTPUT.value, "a") as file:
            file.write(line + "\n")


if __name__ == "__main__":
    runs.set_defaults(**generative_capsules_ablations.DEFAULTS)
    app.run(main)
