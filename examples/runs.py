"""What every example script shares: run set-up, callbacks, training
from the latest backup and the serving export (`run_results.py` writes what
a run measured).

The run-level flags are `run_flags`': the core that this module reads,
and the others each script asks for. A script calls
`set_up(**defaults)` first in its `main` and `run(main, **defaults)`
when run as a program. Flags that several scripts take beyond these live
in a shared module (`heinsen_training.py`, `generative_training.py`), so
that no flag is defined twice and the scripts run in one process (the
tests run them so).
"""

import os
import time

import keras
import numpy as np
from absl import app, flags

from examples import distribution, fitting, run_flags
from keras_capsules import datasets, private_apis

MODEL_DIR, SEED, STRATEGY, MIXED_PRECISION, JIT_COMPILE = run_flags.request(
    __name__, *run_flags.CORE
)

# The defaults the example modules declared, recorded before any script
# changes one.
_DECLARED_DEFAULTS = {}


def run(main, **defaults):
    """`app.run(main)` with the script's flag defaults (so `--help` shows
    them); `--model_dir` is required unless the script gives one."""
    set_defaults(**defaults)
    if defaults.get("model_dir") is None:
        flags.mark_flag_as_required("model_dir")
    app.run(main)


def set_defaults(**defaults):
    """Sets the script's `defaults` and the declared defaults of every
    other flag of the example modules (so that scripts run in one process
    do not inherit each other's); a flag given on the command line (or
    set by a test) keeps its value."""
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if module.startswith("examples."):
            for flag in module_flags:
                _DECLARED_DEFAULTS.setdefault(flag.name, flag.default)
    for name, value in {**_DECLARED_DEFAULTS, **defaults}.items():
        flags.FLAGS.set_default(name, value)


def choice(flag, choices):
    """The value of `flag` (a `FlagHolder`), checked against the script's
    `choices`."""
    if flag.value not in choices:
        raise app.UsageError(
            f"--{flag.name} must be one of {tuple(choices)}. Received: "
            f"{flag.value!r}."
        )
    return flag.value


# The backup folder of the run, shared by all workers, and the strategy
# (set by `set_up`).
_BACKUP_DIR = [None]
_STRATEGY = [None]


def set_up(**defaults):
    """Applies the script's flag defaults (flags given keep their values),
    seeds every generator, sets the dtype policy and makes `--model_dir`.
    Returns the strategy of `--strategy` (`distribution.make_strategy`).

    In a multi-worker run every worker is given the same `--model_dir`
    (storage they share): the chief writes there, every other worker its
    own outputs to `--model_dir/workers/<index>`, and all resume from the
    chief's backup.
    """
    set_defaults(**defaults)
    if MODEL_DIR.value is None:
        raise app.UsageError("--model_dir is required.")
    keras.utils.set_random_seed(SEED.value)
    keras.mixed_precision.set_dtype_policy(
        "float32" if MIXED_PRECISION.value == "none" else MIXED_PRECISION.value
    )
    # Made before any dataset: collective ops are configured when it is.
    strategy = distribution.make_strategy(STRATEGY.value)
    _STRATEGY[0] = strategy
    _BACKUP_DIR[0] = os.path.join(MODEL_DIR.value, "backup")
    if not distribution.is_chief(strategy):
        task = distribution.worker_index(strategy)
        flags.FLAGS.model_dir = os.path.join(
            MODEL_DIR.value, "workers", str(task)
        )
    os.makedirs(MODEL_DIR.value, exist_ok=True)
    return strategy


def static_batches():
    """Whether the training batches must all have one static shape (the
    `tpu` strategy; `mirrored` on JAX): scripts then build them with
    `drop_remainder`."""
    return distribution.needs_static_shapes(_STRATEGY[0])


def one_device():
    """A scope that evaluates on one device (`distribution.one_device`)."""
    return distribution.one_device(_STRATEGY[0])


def use_xla():
    """`--jit_compile`: `true`, `false`, or `auto` (on TensorFlow, GPU
    and TPU only; on JAX always); False for CPU workers of a multi-worker
    run (`fitting.use_xla`)."""
    return fitting.use_xla(JIT_COMPILE.value, _STRATEGY[0])


def in_batch_parts(model, parts):
    """`model` as `recipes.BatchPartsModel` with `parts` slices (a
    script's `--batch_parts`), or `model` itself with one."""
    if parts == 1:
        return model
    if keras.backend.backend() != "tensorflow":
        raise app.UsageError(
            f"--batch_parts={parts} needs Keras's TensorFlow backend "
            f"(this process runs {keras.backend.backend()!r}); leave it at 1."
        )
    from keras_capsules import recipes  # noqa: PLC0415

    return recipes.BatchPartsModel(model, parts=parts)


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
    """`fitting.make_callbacks` in `--model_dir`."""
    return fitting.make_callbacks(MODEL_DIR.value, model_file)


def fit(
    model,
    train,
    model_file,
    train_examples,
    extra_callbacks=(),
    validation_data=None,
):
    """Fits `model` for `--epochs` with `callbacks(model_file)` and
    `extra_callbacks`, from the latest backup in `--model_dir` (see
    `fitting.make_backup`); returns the training entries of
    `results.json` (`train_examples` to `history`, the history of the
    whole run, epochs before a restart included).

    `train` is a `tf.data.Dataset` or `keras.utils.PyDataset` of batches
    or, better, a function of the epoch number that returns that epoch's
    batches in an order drawn from the epoch alone
    (`callbacks.ResumableBackup.fit`): a killed run then resumes with the
    batches the uninterrupted run would have seen.
    Under `static_batches()` every batch must hold `--batch_size`
    examples (build them with `drop_remainder`): their batch size is set
    static here, and a smaller batch stops the run with an error.
    """
    private_apis.work_around_multi_worker_fit(model)
    epoch_batches = train if callable(train) else lambda epoch: train
    if static_batches() and keras.backend.backend() == "tensorflow":
        epoch_batches = datasets.epoch_order.with_static_batch_size(
            epoch_batches, run_flags.value("batch_size")
        )
    backup = fitting.make_backup(
        _BACKUP_DIR[0] or os.path.join(MODEL_DIR.value, "backup"),
        run_flags.value("backup_steps"),
        epoch_batches,
    )
    timer = EpochTimer()
    start = time.time()
    history = backup.fit(
        model,
        epoch_batches,
        run_flags.value("epochs"),
        callbacks=[*callbacks(model_file), timer, *extra_callbacks],
        validation_data=validation_data,
    )
    train_seconds = round(time.time() - start, 1)
    # The first epoch includes tracing and compiling: leave it out.
    steady = timer.seconds[1:] or timer.seconds
    epoch_seconds = float(np.median(steady)) if steady else None
    return {
        "replicas": distribution.replicas(_STRATEGY[0]),
        "train_examples": train_examples,
        "train_seconds": train_seconds,
        "seconds_per_epoch": timer.seconds,
        "examples_per_second": (
            round(train_examples / epoch_seconds, 1) if epoch_seconds else None
        ),
        "history": {
            key: [float(value) for value in values]
            for key, values in history.items()
        },
    }


def epoch_batches(arrays, batch_size, seed):
    """Training batches of in-memory `arrays` as a function of the epoch
    for `fit`: each epoch in an order drawn from `seed` and its number, so
    that a killed run resumes with the batches it would have seen and
    every worker of a multi-worker run sees the same; without a last
    partial batch under `static_batches()`. A `tf.data` pipeline on
    TensorFlow (`datasets.epoch_order`), NumPy batches on the other
    backends (`datasets.array_epoch_batches`)."""
    if keras.backend.backend() != "tensorflow":
        return datasets.array_epoch_batches(
            arrays, batch_size, seed, static_batches()
        )
    import tensorflow as tf  # noqa: PLC0415

    shuffled = datasets.epoch_order.epoch_batches(
        arrays, batch_size, seed, static_batches()
    )

    def of_epoch(epoch):
        return (
            shuffled(epoch)
            .map(lambda index, batch: batch)
            .prefetch(tf.data.AUTOTUNE)
        )

    return of_epoch


def evaluation_batches(arrays, batch_size):
    """Evaluation batches of in-memory `arrays`, in order: a cached
    `tf.data` pipeline on TensorFlow, NumPy batches on the other
    backends."""
    if keras.backend.backend() != "tensorflow":
        return datasets.ArrayBatches(arrays, batch_size)
    import tensorflow as tf  # noqa: PLC0415

    data = tf.data.Dataset.from_tensor_slices(tuple(arrays))
    return data.batch(batch_size).cache().prefetch(tf.data.AUTOTUNE)


def export_serving(model, export_dir, input_spec, serve=None):
    """`fitting.export_serving` to `export_dir` (a script's
    `--export_dir`), if it is given. `input_spec` is a `tf.TensorSpec`,
    or a function that returns one (called only when there is an
    export)."""
    if export_dir:
        if callable(input_spec):
            input_spec = input_spec()
        fitting.export_serving(model, export_dir, input_spec, serve)
