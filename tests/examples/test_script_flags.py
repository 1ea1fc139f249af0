"""Each example script has few flags (its own, those of the shared
modules it imports and the run-level ones they ask for), and no script
imports another."""

import ast
import glob
import os

import pytest

from examples import run_flags

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
# Issue 59: a script that needs more takes them as one --preset.
MOST_FLAGS = 25


def _tree(module):
    with open(os.path.join(_ROOT, "examples", f"{module}.py")) as f:
        return ast.parse(f.read())


def _is_script(module):
    with open(os.path.join(_ROOT, "examples", f"{module}.py")) as f:
        return '__name__ == "__main__"' in f.read()


SCRIPTS = sorted(
    os.path.basename(path)[:-3]
    for path in glob.glob(os.path.join(_ROOT, "examples", "*.py"))
    if _is_script(os.path.basename(path)[:-3])
)


def _imported_examples(tree):
    """The `examples` modules a module imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "examples":
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (
            node.module or ""
        ).startswith("examples."):
            names.add(node.module.split(".")[1])
    return names


def _flags(module, seen):
    """`(own flag names, run-level flag names)` of `module` and the
    `examples` modules it imports, each module counted once."""
    # run_flags holds the definitions; `request` calls count them.
    if module in seen or module == "run_flags":
        return set(), set()
    seen.add(module)
    tree = _tree(module)
    own, run = set(), set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = ast.unparse(node.func)
        if function.startswith("flags.DEFINE_"):
            own.add(f"{module}.{ast.literal_eval(node.args[0])}")
        if function == "run_flags.request":
            for argument in node.args[1:]:
                if isinstance(argument, ast.Starred):
                    run |= set(getattr(run_flags, argument.value.attr))
                else:
                    run.add(ast.literal_eval(argument))
    for imported in _imported_examples(tree):
        more_own, more_run = _flags(imported, seen)
        own |= more_own
        run |= more_run
    return own, run


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_has_at_most_25_flags(script):
    own, run = _flags(script, set())
    assert len(own) + len(run) <= MOST_FLAGS, (script, sorted(own | run))


def _defaults(tree):
    """The literal keys of the module's `DEFAULTS` dict (none if it has
    none); a `**` entry (a preset's settings) is left out."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            ast.unparse(target) == "DEFAULTS" for target in node.targets
        ):
            keys = (key for key in node.value.keys if key is not None)
            return {ast.literal_eval(key) for key in keys}
    return set()


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_script_sets_defaults_only_of_its_flags(script):
    # In a fresh process only the script's own modules define flags: a
    # default of another's flag fails there (`runs.set_defaults`).
    own, run = _flags(script, set())
    names = {name.split(".", 1)[1] for name in own} | run
    assert _defaults(_tree(script)) <= names, (
        script,
        sorted(_defaults(_tree(script)) - names),
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_script_imports_another(script):
    imported = _imported_examples(_tree(script))
    assert not imported & set(SCRIPTS), (script, imported & set(SCRIPTS))


def test_the_counts_see_every_flag():
    # runs asks for the core; a script that imports it has them.
    own, run = _flags("train", set())
    assert set(run_flags.CORE) <= run
    assert "train.routing" in own
