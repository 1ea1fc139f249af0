"""Every docstring example runs, and every public class and function has
one.

The examples of each module of `keras_capsules` run as doctests with
`np`, `keras` and `ops` (`keras.ops`) at hand, in float32 with a fixed
seed. Public means listed in a subpackage's `__all__`.
"""

import doctest
import importlib
import inspect
import pkgutil

import keras
import numpy as np
import pytest

import keras_capsules

_SUBPACKAGES = (
    "callbacks",
    "datasets",
    "distributions",
    "layers",
    "losses",
    "metrics",
    "models",
    "ops",
    "plots",
    "recipes",
    "trainers",
)


def _modules():
    """Every module, but the fast paths of backends other than Keras's
    (they import their framework)."""
    others = {
        f"keras_capsules.backend.{name}"
        for name in ("tensorflow", "torch")
        if name != keras.backend.backend()
    }
    return sorted(
        info.name
        for info in pkgutil.walk_packages(
            keras_capsules.__path__, "keras_capsules.", onerror=lambda _: None
        )
        if not any(
            info.name == other or info.name.startswith(f"{other}.")
            for other in others
        )
    )


def _public():
    """`{"subpackage.Name": object}` of every public class and function."""
    found = {}
    for subpackage in _SUBPACKAGES:
        module = importlib.import_module(f"keras_capsules.{subpackage}")
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                found[f"{subpackage}.{name}"] = value
    return found


def _has_example(value):
    return ">>>" in (inspect.getdoc(value) or "")


@pytest.mark.parametrize("name", _modules())
def test_examples_run(name):
    module = importlib.import_module(name)
    policy = keras.config.dtype_policy()
    keras.utils.set_random_seed(0)
    try:
        result = doctest.testmod(
            module,
            extraglobs={"np": np, "keras": keras, "ops": keras.ops},
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
            verbose=False,
        )
    finally:
        keras.config.set_dtype_policy(policy)
        # No garbage collection: in a worker that has run many tests it
        # takes seconds, and the heap is collected as it grows.
        keras.backend.clear_session(free_memory=False)
    assert result.failed == 0, f"{result.failed} examples of {name} failed"


def test_every_public_name_has_an_example():
    without = {
        name for name, value in _public().items() if not _has_example(value)
    }
    assert not without, f"no `>>>` example in the docstring of {without}"
