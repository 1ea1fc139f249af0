"""Trains Heinsen's (2019) sequence capsule network on the Stanford
Sentiment Treebank: SST-5 (five labels) or SST-2 (two), root sentences.

The paper routes frozen GPT-2-large features of every layer; here the
token embeddings are trainable (`--embedding_dim`, one layer), learned
from the treebank alone, unless `--backbone` names a Keras model saved
locally that maps token ids `(batch, n)` to features `(batch, n, m)` or
`(batch, n, l, m)`; it is frozen, and its `--vocabulary` file (one token
per line, id = line number, 0 = padding) replaces the treebank's. As in
the paper, training uses every unique phrase of the training trees
(`--train_on=phrases`), RAdam on one cycle and mixup of the embeddings,
and testing the root sentences.

Usage:
  python -m examples.train_heinsen_sst --task=sst5 --epochs=3 \
      --model_dir=runs/heinsen_sst5
"""

import os

import keras
import tensorflow as tf
from absl import app, flags

from examples import distribution, heinsen_training
from keras_capsules import datasets, models, recipes
from keras_capsules.datasets import sst

_TASK = flags.DEFINE_enum("task", "sst5", list(sst.TASKS), "SST-5 or SST-2.")
_DATA_DIR = flags.DEFINE_string(
    "data_dir",
    os.path.join("..", "shared", "data", "sst"),
    "Folder of the treebank's train.txt, dev.txt and test.txt.",
)
_TRAIN_ON = flags.DEFINE_enum(
    "train_on",
    "phrases",
    ["phrases", "roots"],
    "Every unique phrase of the training trees (paper) or root sentences.",
)
_EPOCHS = flags.DEFINE_integer("epochs", 3, "Passes (paper: 3).")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 20, "Paper: 20.")
_PEAK_LEARNING_RATE = flags.DEFINE_float(
    "peak_learning_rate", 5e-4, "Top of the one-cycle schedule (paper)."
)
_MIXUP_ALPHA = flags.DEFINE_float(
    "mixup_alpha", 0.2, "Mixup's Beta(alpha, alpha); 0 turns it off."
)
_EMBEDDING_DIM = flags.DEFINE_integer(
    "embedding_dim", 300, "Size of the trainable token embeddings."
)
_BACKBONE = flags.DEFINE_string(
    "backbone", None, "A local .keras model: token ids -> features, frozen."
)
_VOCABULARY = flags.DEFINE_string(
    "vocabulary", None, "The backbone's vocabulary file."
)
_ROUTING_ITERATIONS = flags.DEFINE_integer(
    "routing_iterations", 3, "Iterations of each routing."
)
_TRAIN_SIZE = flags.DEFINE_integer(
    "train_size", None, "Use only the first training examples."
)
_JIT_COMPILE = flags.DEFINE_enum(
    "jit_compile",
    "auto",
    ["auto", "true", "false"],
    "Compile the train step with XLA (`auto`: on GPU and TPU only).",
)
_STRATEGY = flags.DEFINE_enum(
    "strategy",
    "default",
    list(distribution.STRATEGIES),
    "tf.distribute strategy.",
)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir", None, "Backups, model, TensorBoard logs and results."
)
_BACKUP_STEPS = flags.DEFINE_integer(
    "backup_steps",
    1000,
    "Steps between backups; an interrupted run resumes from the last one.",
)
_EXPORT_DIR = flags.DEFINE_string(
    "export_dir", None, "Where to write the serving SavedModel."
)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


class FileVocabulary(sst.Vocabulary):
    """A backbone's vocabulary: one token per line, id = line number."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as file:
            self.ids = {
                line.rstrip("\n").lower(): index
                for index, line in enumerate(file)
                if index >= 2
            }
        self.size = len(self.ids) + 2

    def __len__(self):
        return self.size


def build_embedder(vocabulary):
    """Trainable embeddings, or the frozen backbone and its features'
    shape `(m, l or None)`."""
    if _BACKBONE.value is None:
        return (
            models.token_embedder(len(vocabulary), _EMBEDDING_DIM.value),
            _EMBEDDING_DIM.value,
            None,
        )
    backbone = keras.models.load_model(_BACKBONE.value)
    backbone.trainable = False
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    features = backbone(token_ids)
    presence = models.token_embedder(2, 1)(token_ids)[1]
    embedder = keras.Model(token_ids, [features, presence], name="backbone")
    depths = features.shape[2] if len(features.shape) == 4 else None
    return embedder, features.shape[-1], depths


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    keras.utils.set_random_seed(_SEED.value)
    model_dir = _MODEL_DIR.value
    os.makedirs(model_dir, exist_ok=True)
    task = _TASK.value
    num_classes = sst.TASKS[task]
    train_sentences, train_labels = datasets.load_sst(
        _DATA_DIR.value, "train", task, all_phrases=_TRAIN_ON.value == "phrases"
    )
    if _TRAIN_SIZE.value:
        train_sentences = train_sentences[: _TRAIN_SIZE.value]
        train_labels = train_labels[: _TRAIN_SIZE.value]
    if _VOCABULARY.value:
        vocabulary = FileVocabulary(_VOCABULARY.value)
    else:
        vocabulary = sst.Vocabulary(train_sentences)
    train = datasets.sst_dataset(
        train_sentences,
        train_labels,
        vocabulary,
        num_classes,
        _BATCH_SIZE.value,
        shuffle=True,
        seed=_SEED.value,
    )
    tests = {
        split: datasets.sst_dataset(
            *datasets.load_sst(_DATA_DIR.value, source, task),
            vocabulary,
            num_classes,
            _BATCH_SIZE.value,
        ).cache()
        for split, source in (("test", "test"), ("validation", "validation"))
    }
    steps_per_epoch = -(-len(train_labels) // _BATCH_SIZE.value)
    strategy = distribution.make_strategy(_STRATEGY.value)
    with strategy.scope():
        embedder, embedding_dim, depths = build_embedder(vocabulary)
        classifier = models.heinsen_sequence(
            embedding_dim,
            num_classes,
            num_depths=depths,
            num_iterations=_ROUTING_ITERATIONS.value,
            routing_epsilon=heinsen_training.ROUTING_EPSILON.value,
        )
        model = recipes.MixupClassifier(
            classifier, embedder, alpha=_MIXUP_ALPHA.value, seed=_SEED.value
        )
        heinsen_training.compile_classifier(
            model,
            _EPOCHS.value * steps_per_epoch,
            _PEAK_LEARNING_RATE.value,
            heinsen_training.use_xla(_JIT_COMPILE.value),
            beta_1_schedule=heinsen_training.BETA_1_SCHEDULE.value,
        )
    summary = {
        "task": task,
        "epochs": _EPOCHS.value,
        "train_examples": len(train_labels),
        "vocabulary_size": len(vocabulary),
        "flags": {
            flag: getattr(flags.FLAGS, flag)
            for flag in (
                "train_on",
                "batch_size",
                "peak_learning_rate",
                "mixup_alpha",
                "embedding_dim",
                "backbone",
                "routing_iterations",
                "beta_1_schedule",
                "routing_epsilon",
                "train_size",
                "strategy",
                "seed",
            )
        },
    }
    heinsen_training.train_and_evaluate(
        model,
        train,
        tests,
        _EPOCHS.value,
        model_dir,
        "heinsen_sst.keras",
        _BACKUP_STEPS.value,
        summary,
    )
    if _EXPORT_DIR.value:
        heinsen_training.export_serving(
            model,
            _EXPORT_DIR.value,
            tf.TensorSpec((None, None), tf.int32, "token_ids"),
        )


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
