"""The run-level flags the example scripts share, each defined once.

`runs.set_up` reads the core flags (a run's folder, seed, distribution,
precision and compiler), so every script that uses `runs` has them. The
others a script asks for by name, at import, with `request` (`TRAINING`:
the flags `runs.fit` reads): a script then has, and `--help` shows, the
flags it reads and no others. Each script sets its own defaults
(`runs.set_defaults`).
"""

from absl import flags

from examples import distribution


def _string(name, help_text, default=None):
    return lambda: flags.DEFINE_string(name, default, help_text)


def _integer(name, default, help_text, **bounds):
    return lambda: flags.DEFINE_integer(name, default, help_text, **bounds)


def _enum(name, default, values, help_text):
    return lambda: flags.DEFINE_enum(name, default, values, help_text)


_DEFINITIONS = {
    # The core: what `runs` reads.
    "model_dir": _string(
        "model_dir", "Backups, model, TensorBoard logs and results."
    ),
    "seed": _integer("seed", 0, "Random seed."),
    "strategy": _enum(
        "strategy",
        "default",
        list(distribution.STRATEGIES),
        "How training spreads over devices: a tf.distribute strategy on "
        "TensorFlow; on JAX, `mirrored` is keras.distribution.DataParallel "
        "over every local device.",
    ),
    "mixed_precision": _enum(
        "mixed_precision",
        "none",
        ["none", "mixed_float16", "mixed_bfloat16"],
        "Keras dtype policy.",
    ),
    "jit_compile": _enum(
        "jit_compile",
        "auto",
        ["auto", "true", "false"],
        "Compile the train step with XLA (`auto`: on GPU and TPU only).",
    ),
    "epochs": _integer("epochs", 1, "Passes over the training data."),
    "batch_size": _integer("batch_size", 32, "Examples per step."),
    "backup_steps": _integer(
        "backup_steps",
        500,
        "Steps between backups within an epoch (every epoch's end is "
        "backed up too); a killed run resumes from the last one when the "
        "same command runs again.",
    ),
    # What scripts ask for.
    "dataset": _string(
        "dataset", "Data to train on (the script lists its choices)."
    ),
    "preset": _string(
        "preset",
        "A named set of the script's settings, optionally with some changed: "
        "NAME or NAME:field=value,... (the script lists its presets).",
    ),
    "train_size": _integer(
        "train_size", None, "Use only the first training examples."
    ),
    "test_size": _integer(
        "test_size", None, "Use only the first examples of each test split."
    ),
    "learning_rate": lambda: flags.DEFINE_float(
        "learning_rate", 1e-3, "The optimiser's (peak) learning rate."
    ),
    "capsule_dim": _integer(
        "capsule_dim", 4, "Size of each class capsule (the script says how)."
    ),
    "routing_iterations": _integer(
        "routing_iterations",
        None,
        "Iterations of each routing (the script's default when unset).",
    ),
    "batch_parts": _integer(
        "batch_parts",
        1,
        "Train and evaluate each batch in this many slices, each an XLA "
        "program of its own, which a CPU runs side by side "
        "(`recipes.BatchPartsModel`; 2 on two cores).",
        lower_bound=1,
    ),
    "export_dir": _string("export_dir", "Where to write the SavedModel."),
    "figures": lambda: flags.DEFINE_bool(
        "figures", True, "Write the script's PNG figures."
    ),
}
CORE = ("model_dir", "seed", "strategy", "mixed_precision", "jit_compile")
TRAINING = ("epochs", "batch_size", "backup_steps")
_HOLDERS = {}
# The run-level flags each module asked for, by the module's name.
REQUESTED = {}


def request(module, *names):
    """Defines the run-level flags `names` (unless defined already) for
    the script or shared module `module` (its `__name__`); returns their
    `FlagHolder`s in order."""
    unknown = [name for name in names if name not in _DEFINITIONS]
    if unknown:
        raise ValueError(
            f"No run-level flag {unknown}. Expected names of "
            f"{tuple(_DEFINITIONS)}."
        )
    for name in names:
        if name not in _HOLDERS:
            _HOLDERS[name] = _DEFINITIONS[name]()
    REQUESTED.setdefault(module, set()).update(names)
    holders = tuple(_HOLDERS[name] for name in names)
    return holders if len(holders) > 1 else holders[0]


def value(name):
    """The value of the run-level flag `name`, which a module must have
    asked for."""
    if name not in _HOLDERS:
        raise ValueError(
            f"No module of this script asked for --{name}; request it with "
            f"`run_flags.request(__name__, {name!r})`."
        )
    return _HOLDERS[name].value


def requested_by(modules):
    """The names of the run-level flags the `modules` asked for, and the
    core."""
    names = set(CORE)
    for module in modules:
        names |= REQUESTED.get(module, set())
    return names
