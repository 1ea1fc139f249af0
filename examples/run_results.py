"""The results of an example run: `results.json`, one schema for every
script, and the fit-evaluate-save of the classifiers' scripts.

`results.json`:

```none
script, dataset        what ran
flags                  every flag the script reads
parameters             the model's weights
replicas               devices each step runs on (`--strategy`)
train_examples         examples in one pass over the training data
train_seconds          fit's wall time (evaluation after each epoch too)
seconds_per_epoch      training time of each epoch, without evaluation
examples_per_second    training examples / median epoch time (without
                       the first epoch, which compiles, when there are more)
history                fit's metrics per epoch
evaluation             {split: {metric: value}} after training; every
                       classifier reports `accuracy` (test error is
                       1 - accuracy)
```

A script adds its own entries after these (the docstring says which).
"""

import json
import os
import sys
import types

from absl import flags

from examples import run_flags, runs


def script_flags(main):
    """`{name: value}` of the flags of `main`'s script, of the example
    modules it imports (directly or through others) and of the run-level
    flags they read."""
    names = {main.__module__, _module_name(main)}
    _add_imported_examples(sys.modules.get(main.__module__), names)
    values = {
        name: flags.FLAGS[name].value for name in run_flags.requested_by(names)
    }
    for name in names:
        for flag in flags.FLAGS.get_flags_for_module(name):
            values[flag.name] = flag.value
    return dict(sorted(values.items()))


def _add_imported_examples(module, names):
    """Adds to `names` the `examples` modules that `module` imports,
    transitively (not `run_flags`: `requested_by` says which of its flags
    each module reads)."""
    for value in vars(module).values() if module else ():
        name = getattr(value, "__name__", "")
        if (
            isinstance(value, types.ModuleType)
            and name.startswith("examples.")
            and name not in ("examples.run_flags", *names)
        ):
            names.add(name)
            _add_imported_examples(value, names)


def _module_name(main):
    """The dotted name of `main`'s module, also when it runs as
    `__main__` (`python -m`, `examples.quiet_start`)."""
    spec = getattr(sys.modules.get(main.__module__), "__spec__", None)
    return spec.name if spec is not None else main.__module__


def describe_run(main, dataset, parameters=None):
    """The first entries of `results.json`: the script, `dataset`, the
    flags (`script_flags`) and the model's `parameters` (if given)."""
    description = {
        "script": _module_name(main),
        "dataset": dataset,
        "flags": script_flags(main),
    }
    if parameters is not None:
        description["parameters"] = parameters
    return description


def evaluate(model, tests):
    """`{split: {metric: value}}` of `model.evaluate` on each of `tests`
    (on one device: `runs.one_device`)."""
    with runs.one_device():
        return {
            split: {
                name: round(float(value), 5)
                for name, value in model.evaluate(
                    data, return_dict=True, verbose=0
                ).items()
            }
            for split, data in tests.items()
        }


def write_results(results, file_name="results.json"):
    """Writes `results` to `file_name` in `--model_dir` and prints them
    (without the history) as one JSON line."""
    with open(os.path.join(runs.MODEL_DIR.value, file_name), "w") as file:
        json.dump(results, file, indent=1)
    print(json.dumps({k: v for k, v in results.items() if k != "history"}))


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
    extra_results=None,
):
    """Fits for `--epochs`, evaluates every test split, saves the model in
    `--model_dir` and writes `results.json` (see the module docstring).

    Args:
        main: the script's `main`, whose module's flags are recorded.
        model: a compiled `keras.Model`.
        train: the training `tf.data.Dataset` of batches, or a function
            of the epoch number that returns them (see `runs.fit`).
        tests: `{split: dataset}` evaluated after training.
        model_file: file name of the saved model in `--model_dir`.
        train_examples: int, examples in one pass over `train`.
        dataset: the dataset's name, for the results.
        extra_callbacks: callbacks beyond `runs.callbacks(model_file)`.
        validation_split: optional key of `tests` evaluated after each
            epoch as fit's validation data.
        extra_results: optional dict of more entries for the results, or
            a function of the trained model that returns one; an
            `"evaluation"` entry in it adds splits to the evaluation.

    Returns:
        The results written to `results.json`.
    """
    training = runs.fit(
        model,
        train,
        model_file,
        train_examples,
        extra_callbacks,
        tests[validation_split] if validation_split else None,
    )
    if callable(extra_results):
        extra_results = extra_results(model)
    extra_results = dict(extra_results or {})
    results = {
        **describe_run(main, dataset, model.count_params()),
        **training,
        "evaluation": {
            **evaluate(model, tests),
            **extra_results.pop("evaluation", {}),
        },
        **extra_results,
    }
    model.save(os.path.join(runs.MODEL_DIR.value, model_file))
    write_results(results)
    return results
