"""The sweep scripts of `research/` run every variant they list: each is
run with a stand-in `python` first on the PATH, which records every
`python -m MODULE FLAGS` the script starts (and writes the results file
that run would write) and hands everything else (the scripts' summaries
of each run) to the real Python. Every recorded command must name a
module that defines its flags, with values they accept; every variant
must print its summary line."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap

import pytest

from tests import test_docs

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))

# A results.json with what the scripts' summaries read.
_RESULTS = {
    "dataset": "procedural_shapes",
    "evaluation": {"test": {"accuracy": 0.5}},
    "history": {"val_accuracy": [0.5]},
    "train_seconds": 1.0,
    "flags": {},
}

_STAND_IN = """\
#!{python}
import json, os, sys
if sys.argv[1:2] != ["-m"]:
    os.execv({python!r}, [{python!r}, *sys.argv[1:]])
with open(os.environ["RECORDED_COMMANDS"], "a") as f:
    f.write(json.dumps(sys.argv[2:]) + "\\n")
(model_dir,) = [a[12:] for a in sys.argv if a.startswith("--model_dir=")]
os.makedirs(model_dir, exist_ok=True)
with open(os.path.join(model_dir, "results.json"), "w") as f:
    json.dump({results!r}, f)
"""


def _run_script(script, folder, environment=None):
    """Runs `research/SCRIPT` with the stand-in; returns its standard
    output and the recorded commands."""
    bin_folder = os.path.join(folder, "bin")
    os.makedirs(bin_folder)
    stand_in = os.path.join(bin_folder, "python")
    with open(stand_in, "w") as f:
        f.write(
            textwrap.dedent(
                _STAND_IN.format(python=sys.executable, results=_RESULTS)
            )
        )
    os.chmod(stand_in, os.stat(stand_in).st_mode | stat.S_IEXEC)
    recorded = os.path.join(folder, "commands.jsonl")
    result = subprocess.run(
        ["bash", os.path.join(_ROOT, "research", script), folder + "/out"],
        env={
            **os.environ,
            **(environment or {}),
            "PATH": bin_folder + os.pathsep + os.environ["PATH"],
            "RECORDED_COMMANDS": recorded,
        },
        capture_output=True,
        text=True,
        check=True,
    )
    with open(recorded) as f:
        commands = [json.loads(line) for line in f]
    return result.stdout, commands


@pytest.mark.parametrize(
    "script, environment, runs",
    [
        ("matrix_capsule_ablations.sh", None, 19),
        ("heinsen_image_ablations.sh", None, 5),
        (
            "capsule_regression_sweep.sh",
            {"DIMS": "1 2", "ARCHITECTURES": "multiclass all_vs_all"},
            8,
        ),
    ],
)
def test_every_variant_runs_with_flags_its_module_takes(
    script, environment, runs
):
    with tempfile.TemporaryDirectory() as folder:
        output, commands = _run_script(script, folder, environment)
    assert len(commands) == runs
    for command in commands:
        test_docs._check_flags(command[0], command[1:])
    if script == "capsule_regression_sweep.sh":
        return  # It collects the results files instead of summarising.
    lines = [json.loads(line) for line in output.splitlines()]
    assert len(lines) == runs
    assert len({line["variant"] for line in lines}) == runs
