"""What every example script shares: the run-level flags (defined here
once; each script sets its own defaults), run set-up, callbacks,
fit-evaluate-save with one `results.json` schema, and the serving export.

A script calls `set_up(**defaults)` first in its `main` and
`run(main, **defaults)` when run as a program.

`results.json`:

```none
script, dataset        what ran
flags                  every flag of the script and of this module
train_examples         examples in one pass over the training data
train_seconds          fit's wall time (evaluation after each epoch too)
seconds_per_epoch      training time of each epoch, without evaluation
examples_per_second    training examples / median epoch time (without
                       the first epoch, which compiles, when there are more)
parameters             the model's weights
history                fit's metrics per epoch
evaluation             {split: {metric: value}} after training
```
"""

import json
import os
import time

import keras
import numpy as np
from absl import app, flags

from examples import distribution, fitting

MODEL_DIR = flags.DEFINE_string(
    "model_dir", None, "Backups, model, TensorBoard logs and results."
)
DATASET = flags.DEFINE_string(
    "dataset", None, "Data to train on (the script lists its choices)."
)
TRAIN_SIZE = flags.DEFINE_integer(
    "train_size", None, "Use only the first training examples."
)
TEST_SIZE = flags.DEFINE_integer(
    "test_size", None, "Use only the first examples of each test split."
)
EPOCHS = flags.DEFINE_integer("epochs", 1, "Passes over the training data.")
BATCH_SIZE = flags.DEFINE_integer("batch_size", 32, "Examples per step.")
LEARNING_RATE = flags.DEFINE_float(
    "learning_rate", 1e-3, "The optimiser's (peak) learning rate."
)
CAPSULE_DIM = flags.DEFINE_integer(
    "capsule_dim", 4, "Size of each class capsule (the script says how)."
)
ROUTING_ITERATIONS = flags.DEFINE_integer(
    "routing_iterations", 3, "Iterations of each routing."
)
SEED = flags.DEFINE_integer("seed", 0, "Random seed.")
STRATEGY = flags.DEFINE_enum(
    "strategy",
    "default",
    list(distribution.STRATEGIES),
    "tf.distribute strategy.",
)
JIT_COMPILE = flags.DEFINE_enum(
    "jit_compile",
    "auto",
    ["auto", "true", "false"],
    "Compile the train step with XLA (`auto`: on GPU and TPU only).",
)
MIXED_PRECISION = flags.DEFINE_enum(
    "mixed_precision",
    "none",
    ["none", "mixed_float16", "mixed_bfloat16"],
    "Keras dtype policy.",
)
BACKUP_STEPS = flags.DEFINE_integer(
    "backup_steps",
    500,
    "Steps between backups; an interrupted run resumes from the last one.",
)
EXPORT_DIR = flags.DEFINE_string(
    "export_dir", None, "Where to write the serving SavedModel."
)
FIGURES = flags.DEFINE_bool(
    "figures", True, "Write the script's PNG figures (if it has any)."
)

_MODULE_DEFAULTS = {
    flag.name: flag.default
    for flag in flags.FLAGS.get_flags_for_module(__name__)
}


def run(main, **defaults):
    """`app.run(main)` with the script's flag defaults (so `--help` shows
    them) and `--model_dir` required."""
    set_defaults(**defaults)
    flags.mark_flag_as_required("model_dir")
    app.run(main)


def set_defaults(**defaults):
    """Sets the script's defaults of flags defined here, and this module's
    defaults for the rest (so that scripts run in one process do not
    inherit each other's); a flag given on the command line (or set by a
    test) keeps its value."""
    for name, value in {**_MODULE_DEFAULTS, **defaults}.items():
        flags.FLAGS.set_default(name, value)


def dataset(choices):
    """`--dataset`, checked against the script's `choices`."""
    if DATASET.value not in choices:
        raise app.UsageError(
            f"--dataset must be one of {tuple(choices)}. Received: "
            f"{DATASET.value!r}."
        )
    return DATASET.value


def set_up(**defaults):
    """Applies the script's flag defaults (flags given keep their values),
    seeds every generator, sets the dtype policy and makes `--model_dir`.
    Returns the `tf.distribute.Strategy` of `--strategy`."""
    set_defaults(**defaults)
    if MODEL_DIR.value is None:
        raise app.UsageError("--model_dir is required.")
    keras.utils.set_random_seed(SEED.value)
    keras.mixed_precision.set_dtype_policy(
        "float32" if MIXED_PRECISION.value == "none" else MIXED_PRECISION.value
    )
    os.makedirs(MODEL_DIR.value, exist_ok=True)
    return distribution.make_strategy(STRATEGY.value)


def use_xla():
    """`--jit_compile`: `true`, `false`, or `auto` (GPU and TPU only)."""
    return fitting.use_xla(JIT_COMPILE.value)


class EpochTimer(keras.callbacks.Callback):
    """Training seconds of each epoch, up to its evaluation (if any)."""

    def __init__(self):
        super().__init__()
        self.seconds = []
        self._start = None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def _stop(self):
        if self._start is not None:
            self.seconds.append(round(time.perf_counter() - self._start, 2))
            self._start = None

    def on_test_begin(self, logs=None):
        self._stop()

    def on_epoch_end(self, epoch, logs=None):
        self._stop()


def callbacks(model_file):
    """`fitting.make_callbacks` in `--model_dir`, `--backup_steps` apart."""
    return fitting.make_callbacks(
        MODEL_DIR.value, model_file, BACKUP_STEPS.value
    )


def script_flags(main, modules=()):
    """`{name: value}` of the flags of `main`'s script, of the `modules`
    it takes flags from and of this module."""
    values = {}
    for module in (__name__, main.__module__, *modules):
        name = module if isinstance(module, str) else module.__name__
        for flag in flags.FLAGS.get_flags_for_module(name):
            values[flag.name] = flag.value
    return dict(sorted(values.items()))


def train_and_evaluate(
    main,
    model,
    train,
    tests,
    model_file,
    train_examples,
    dataset,
    extra_callbacks=(),
    validation_split=None,
    flag_modules=(),
    extra_results=None,
):
    """Fits for `--epochs`, evaluates every test split, saves the model in
    `--model_dir` and writes `results.json` (see the module docstring).

    Args:
        main: the script's `main`, whose module's flags are recorded.
        model: a compiled `keras.Model`.
        train: the training `tf.data.Dataset` of batches.
        tests: `{split: dataset}` evaluated after training.
        model_file: file name of the saved model in `--model_dir`.
        train_examples: int, examples in one pass over `train`.
        dataset: the dataset's name, for the results.
        extra_callbacks: callbacks beyond `callbacks(model_file)`.
        validation_split: optional key of `tests` evaluated after each
            epoch as fit's validation data.
        flag_modules: modules besides the script's whose flags it uses
            (recorded in the results).
        extra_results: optional dict of more entries for the results.

    Returns:
        The results written to `results.json`.
    """
    timer = EpochTimer()
    start = time.time()
    history = model.fit(
        train,
        epochs=EPOCHS.value,
        validation_data=tests[validation_split] if validation_split else None,
        callbacks=[*callbacks(model_file), timer, *extra_callbacks],
    )
    train_seconds = round(time.time() - start, 1)
    evaluation = {
        split: {
            name: round(float(value), 5)
            for name, value in model.evaluate(
                data, return_dict=True, verbose=0
            ).items()
        }
        for split, data in tests.items()
    }
    # The first epoch includes tracing and compiling: leave it out.
    steady = timer.seconds[1:] or timer.seconds
    epoch_seconds = float(np.median(steady)) if steady else None
    results = {
        "script": main.__module__,
        "dataset": dataset,
        "flags": script_flags(main, flag_modules),
        "train_examples": train_examples,
        "train_seconds": train_seconds,
        "seconds_per_epoch": timer.seconds,
        "examples_per_second": (
            round(train_examples / epoch_seconds, 1) if epoch_seconds else None
        ),
        "parameters": model.count_params(),
        "history": {
            key: [float(value) for value in values]
            for key, values in history.history.items()
        },
        "evaluation": evaluation,
        **(extra_results or {}),
    }
    model.save(os.path.join(MODEL_DIR.value, model_file))
    with open(os.path.join(MODEL_DIR.value, "results.json"), "w") as file:
        json.dump(results, file, indent=1)
    print(json.dumps({k: v for k, v in results.items() if k != "history"}))
    return results


def export_serving(model, input_spec, serve=None):
    """`fitting.export_serving` to `--export_dir`, if it is given."""
    if EXPORT_DIR.value:
        fitting.export_serving(model, EXPORT_DIR.value, input_spec, serve)
