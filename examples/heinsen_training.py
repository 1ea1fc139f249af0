"""What the two Heinsen example scripts share: the paper's optimiser and
schedule, callbacks, results and the serving export."""

import json
import os
import time

import keras
import tensorflow as tf
from absl import flags

from keras_capsules import recipes

OPTIMIZERS = ("radam", "adam")
BETA_1_SCHEDULES = {
    "author": recipes.AUTHOR_BETA_1,
    "paper_text": recipes.PAPER_TEXT_BETA_1,
}

# Flags both scripts take: where the author's code and the paper's text
# (or this library's first version) differ.
BETA_1_SCHEDULE = flags.DEFINE_enum(
    "beta_1_schedule",
    "author",
    list(BETA_1_SCHEDULES),
    "RAdam's beta_1 on the cycle: `author` 0.9 -> 0.81 (the code that "
    "produced the paper's numbers), `paper_text` 0.999 -> 0.8991.",
)
ROUTING_EPSILON = flags.DEFINE_float(
    "routing_epsilon", 1e-5, "Routing's stabiliser (the author's: 1e-5)."
)


def compile_classifier(
    model,
    total_steps,
    peak_learning_rate,
    jit_compile,
    optimizer="radam",
    beta_1_schedule="author",
    start_learning_rate=1e-5,
):
    """Compiles for cross-entropy on the softmax of the output scores,
    with accuracy.

    The learning rate follows one cycle (`start_learning_rate` -> peak
    over 10% of the steps, cosine back). `optimizer="radam"` is the
    paper's: RAdam, its `beta_1` on the same cycle, 0.9 -> 0.81 -> 0.9 as
    the author's code (`beta_1_schedule="author"`) or 0.999 -> 0.8991 ->
    0.999 as the paper's text (`"paper_text"`). `"adam"`: Adam with
    Keras's constant betas.
    """
    if optimizer not in OPTIMIZERS or beta_1_schedule not in BETA_1_SCHEDULES:
        raise ValueError(
            f"`compile_classifier` expects `optimizer` in {OPTIMIZERS} and "
            f"`beta_1_schedule` in {tuple(BETA_1_SCHEDULES)}. Received: "
            f"optimizer={optimizer!r}, beta_1_schedule={beta_1_schedule!r}."
        )
    learning_rate = (start_learning_rate, peak_learning_rate)
    if optimizer == "radam":
        optimizer = recipes.one_cycle_radam(
            total_steps,
            learning_rate=learning_rate,
            beta_1=BETA_1_SCHEDULES[beta_1_schedule],
        )
    else:
        optimizer = keras.optimizers.Adam(
            recipes.OneCycle(total_steps, *learning_rate)
        )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
        jit_compile=jit_compile,
    )


def use_xla(flag_value):
    """`--jit_compile`: `true`, `false`, or `auto` (GPU and TPU only)."""
    if flag_value != "auto":
        return flag_value == "true"
    return bool(
        tf.config.list_logical_devices("GPU")
        + tf.config.list_logical_devices("TPU")
    )


def make_callbacks(model_dir, model_file, backup_steps):
    """A backup that resumes an interrupted run, the latest model each
    epoch, TensorBoard logs."""
    return [
        keras.callbacks.BackupAndRestore(
            os.path.join(model_dir, "backup"), save_freq=backup_steps
        ),
        keras.callbacks.ModelCheckpoint(os.path.join(model_dir, model_file)),
        keras.callbacks.TensorBoard(os.path.join(model_dir, "logs")),
    ]


def train_and_evaluate(
    model, train, tests, epochs, model_dir, model_file, backup_steps, summary
):
    """Fits, evaluates every test split, saves the model and writes
    `results.json` (`summary` plus timings, history and test accuracy).
    Returns the results."""
    start = time.time()
    history = model.fit(
        train,
        epochs=epochs,
        validation_data=tests["test"],
        callbacks=make_callbacks(model_dir, model_file, backup_steps),
    )
    results = {
        **summary,
        "train_seconds": round(time.time() - start, 1),
        "parameters": model.count_params(),
        "history": {
            key: [float(value) for value in values]
            for key, values in history.history.items()
        },
    }
    for split, data in tests.items():
        scores = model.evaluate(data, return_dict=True, verbose=0)
        results[f"{split}_accuracy"] = round(scores["accuracy"], 5)
        print(f"{split} accuracy: {scores['accuracy']:.2%}")
    model.save(os.path.join(model_dir, model_file))
    with open(os.path.join(model_dir, "results.json"), "w") as file:
        json.dump(results, file, indent=1)
    print(json.dumps({k: v for k, v in results.items() if k != "history"}))
    return results


def export_serving(model, export_dir, input_spec):
    """Writes a SavedModel whose `serve` signature maps `input_spec` inputs
    to `{"probabilities": softmax of the class scores, "scores": the class
    scores (logits)}`, both float32."""
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(inputs):
        scores = tf.cast(model(inputs, training=False), tf.float32)
        return {"probabilities": tf.nn.softmax(scores), "scores": scores}

    archive.add_endpoint("serve", serve, input_signature=[input_spec])
    archive.write_out(export_dir, verbose=False)
