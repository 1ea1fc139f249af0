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
from absl import flags

from examples import heinsen_training, run_flags, run_results, runs
from keras_capsules import datasets, models, recipes
from keras_capsules.datasets import sst

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

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
_EMBEDDING_DIM = flags.DEFINE_integer(
    "embedding_dim", 300, "Size of the trainable token embeddings."
)
_BACKBONE = flags.DEFINE_string(
    "backbone", None, "A local .keras model: token ids -> features, frozen."
)
_VOCABULARY = flags.DEFINE_string(
    "vocabulary", None, "The backbone's vocabulary file."
)
# The script's defaults of the run-level flags: the paper's 3 epochs of
# batch 20, one cycle to the learning rate 5e-4.
DEFAULTS = {
    "epochs": 3,
    "batch_size": 20,
    "learning_rate": 5e-4,
    "backup_steps": 1000,
    "routing_iterations": 3,
}
_TRAIN_SIZE, _ROUTING_ITERATIONS, _EXPORT_DIR = run_flags.request(
    __name__, "train_size", "routing_iterations", "export_dir"
)


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
    del argv
    strategy = runs.set_up(**DEFAULTS)
    task, seed = _TASK.value, runs.SEED.value
    batch_size, train_size = _BATCH_SIZE.value, _TRAIN_SIZE.value
    num_classes = sst.TASKS[task]
    train_sentences, train_labels = datasets.load_sst(
        _DATA_DIR.value, "train", task, all_phrases=_TRAIN_ON.value == "phrases"
    )
    if train_size:
        train_sentences = train_sentences[:train_size]
        train_labels = train_labels[:train_size]
    if _VOCABULARY.value:
        vocabulary = FileVocabulary(_VOCABULARY.value)
    else:
        vocabulary = sst.Vocabulary(train_sentences)
    train = datasets.sst_dataset(
        train_sentences,
        train_labels,
        vocabulary,
        num_classes,
        batch_size,
        shuffle=True,
        seed=seed,
        static_shapes=runs.static_batches(),
    )
    tests = {
        split: datasets.sst_dataset(
            *datasets.load_sst(_DATA_DIR.value, source, task),
            vocabulary,
            num_classes,
            batch_size,
        ).cache()
        for split, source in (("test", "test"), ("validation", "validation"))
    }
    steps_per_epoch = (
        len(train_labels) // batch_size
        if runs.static_batches()
        else -(-len(train_labels) // batch_size)
    )
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
            classifier,
            embedder,
            alpha=heinsen_training.MIXUP_ALPHA.value,
            seed=seed,
        )
        heinsen_training.compile_for_run(model, steps_per_epoch)
    run_results.train_and_evaluate(
        main,
        model,
        train,
        tests,
        "heinsen_sst.keras",
        len(train_labels),
        task,
        validation_split="test",
        extra_results={"vocabulary_size": len(vocabulary)},
    )
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        tf.TensorSpec((None, None), tf.int32, "token_ids"),
    )


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
