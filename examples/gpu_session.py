"""Long runs on a lent GPU machine that has JAX but no TensorFlow, no
network and a per-command time limit: CapsNet and the full matrix-capsule
model on MNIST, and the routing benchmark at the papers' batch sizes.

`--action=pack`, here (TensorFlow installed, network reachable), writes
what such a machine lacks into `--pack_dir`: Keras and the two packages
it needs that the machine's image does not hold, as wheels for its
Python, and MNIST and Fashion-MNIST as prepared-array files
(`datasets.save_image_arrays`), about 46 MB in all.

`--action=train`, there, runs the jobs of `--size` in order on JAX, each
as its example script (or benchmark) in a process of its own, until
`--budget_seconds` are spent. A job killed at the budget resumes from
its latest backup (`callbacks.ResumableBackup`) at the next call that
finds `--runs_dir`; a finished job is not run again. What each finished
job measured, and `device.json` (JAX's devices), are copied to
`--results_dir`. `--size=tiny` runs the same jobs in seconds on a CPU:
the test suite runs it, so that GPU minutes go to training.

Usage:
  python -m examples.gpu_session --action=pack --pack_dir=.gpu_pack
  # there, with .gpu_pack carried beside the repository:
  python3 -m pip install --no-index --no-deps --target=/tmp/site \\
      .gpu_pack/wheels/*.whl
  PYTHONPATH=/tmp/site:. python3 -m examples.gpu_session --action=train \\
      --pack_dir=.gpu_pack --runs_dir=.gpu_runs --results_dir=$OUT
"""

import json
import os
import shutil
import subprocess
import sys
import time
from importlib import metadata

from absl import app, flags

_ACTION = flags.DEFINE_enum(
    "action", None, ["pack", "train"], "Pack here, or train there."
)
_PACK_DIR = flags.DEFINE_string(
    "pack_dir", ".gpu_pack", "Wheels and data for the GPU machine."
)
_RUNS_DIR = flags.DEFINE_string(
    "runs_dir", ".gpu_runs", "Each job's model folder (its backups)."
)
_RESULTS_DIR = flags.DEFINE_string(
    "results_dir", None, "Where finished jobs' results are copied."
)
_SIZE = flags.DEFINE_enum(
    "size", "paper", ["paper", "tiny"], "The jobs' sizes: see `JOBS`."
)
_BUDGET_SECONDS = flags.DEFINE_float(
    "budget_seconds",
    540.0,
    "Wall time of this call's training (the machine's limit per command "
    "is 600 s).",
)
_PYTHON_VERSION = flags.DEFINE_string(
    "python_version", "3.12", "The GPU machine's Python, for the wheels."
)

# Keras's own needs that the GPU machine's image lacks (it has absl-py,
# h5py, ml-dtypes, NumPy, rich, typing-extensions and JAX).
WHEELS = ("keras", "namex", "optree")
DATASETS = ("mnist", "fashion_mnist")
# What one command carries to the machine, the repository included.
CARRY_LIMIT_BYTES = 64 * 2**20
# The CapsNet recipe of the docs' 8-epoch run (Adam 1e-3 decayed x0.9 per
# epoch, batch 128, shifts of up to 2 pixels) run to 30 epochs: the paper
# gives no schedule. The matrix-capsule script's defaults, full model.
_CAPSNET = ["--dataset=mnist", "--batch_size=128", "--figures=false"]
_MATRIX = ["--dataset=mnist", "--batch_size=32"]
_TINY_DATA = ["--train_size=64", "--test_size=32", "--batch_size=16"]
# Each job: its module and its flags at each size, in the order they run.
JOBS = {
    "capsnet_mnist": (
        "examples.train_capsnet",
        {
            "paper": _CAPSNET
            + ["--preset=paper", "--epochs=30", "--learning_rate_decay=0.9"],
            "tiny": _CAPSNET + ["--preset=small", "--epochs=2"] + _TINY_DATA,
        },
    ),
    "matrix_capsnet_mnist": (
        "examples.train_matrix_capsules",
        {
            "paper": _MATRIX + ["--model=full", "--epochs=20"],
            "tiny": _MATRIX + ["--model=small", "--epochs=1"] + _TINY_DATA,
        },
    ),
    "routing_bench": (
        "bench.backends",
        {
            "paper": ["--repeats=3"],
            "tiny": ["--shapes=heinsen_64_to_5_b20", "--repeats=1"],
        },
    ),
}


def pack(pack_dir, python_version):
    """Writes the wheels and the prepared-array files into `pack_dir`;
    returns its size in bytes."""
    from keras_capsules import datasets  # noqa: PLC0415

    for name in DATASETS:
        datasets.save_image_arrays(name, os.path.join(pack_dir, "data"))
    download_wheels(os.path.join(pack_dir, "wheels"), python_version)
    size = folder_bytes(pack_dir)
    repository = repository_bytes()
    if size + repository > CARRY_LIMIT_BYTES:
        raise ValueError(
            f"The pack holds {size / 2**20:.1f} MiB and the repository "
            f"{repository / 2**20:.1f} MiB; one command carries at most "
            f"{CARRY_LIMIT_BYTES / 2**20:.0f} MiB. Pack fewer datasets "
            "(`DATASETS`)."
        )
    return size


def download_wheels(folder, python_version):
    """pip's wheels of `WHEELS` at this environment's versions, built for
    CPython `python_version` on x86-64 Linux."""
    platforms = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64")
    command = [
        sys.executable,
        *("-m", "pip", "download", "--no-deps", "--only-binary=:all:"),
        *("--implementation", "cp", "--python-version", python_version),
        *(argument for p in platforms for argument in ("--platform", p)),
        *("--dest", folder, "--quiet"),
        *(f"{name}=={metadata.version(name)}" for name in WHEELS),
    ]
    subprocess.run(command, check=True)


def repository_bytes():
    """The size of the files git tracks here (0 outside a checkout)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"], capture_output=True, check=False
    )
    names = [name for name in listing.stdout.decode().split("\0") if name]
    return sum(os.path.getsize(name) for name in names if os.path.isfile(name))


def folder_bytes(folder):
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(folder)
        for name in names
    )


def job_command(name, size, model_dir):
    """The command line of job `name` at `size` (a benchmark writes its
    lines to stdout; a training script into `model_dir`)."""
    module, sizes = JOBS[name]
    command = [sys.executable, "-m", module, *sizes[size]]
    if module == "bench.backends":
        return [*command, f"--pythons=jax={sys.executable}"]
    return [*command, f"--model_dir={model_dir}"]


def results_file(name, runs_dir):
    """Where job `name` leaves what it measured once it has finished."""
    folder = os.path.join(runs_dir, name)
    if JOBS[name][0] == "bench.backends":
        return os.path.join(folder, "results.jsonl")
    return os.path.join(folder, "results.json")


def run_job(name, size, runs_dir, seconds, environment):
    """Runs job `name` for at most `seconds`; returns `"done"`,
    `"stopped"` (killed at the budget: it resumes at the next call) or
    `"failed"`. Its output goes to `<runs_dir>/<name>/output.txt`, its
    log to `log.txt` beside it."""
    folder = os.path.join(runs_dir, name)
    os.makedirs(folder, exist_ok=True)
    output_path = os.path.join(folder, "output.txt")
    with (
        open(output_path, "w") as output,
        open(os.path.join(folder, "log.txt"), "a") as log,
    ):
        try:
            result = subprocess.run(
                job_command(name, size, folder),
                stdout=output,
                stderr=log,
                env=environment,
                timeout=seconds,
            )
        except subprocess.TimeoutExpired:
            return "stopped"
    if result.returncode:
        return "failed"
    if JOBS[name][0] == "bench.backends":  # Its JSON lines are its results.
        with open(output_path) as output:
            lines = [line for line in output if line.startswith("{")]
        with open(results_file(name, runs_dir), "w") as file:
            file.writelines(lines)
    return "done"


def train(pack_dir, runs_dir, results_dir, size, budget_seconds):
    """Runs the unfinished jobs until the budget is spent; returns
    `{job: status}` (`"finished before"` for jobs this call skipped)."""
    deadline = time.monotonic() + budget_seconds
    environment = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "TFDS_DATA_DIR": os.path.abspath(os.path.join(pack_dir, "data")),
        "PYTHONPATH": os.pathsep.join(
            [os.getcwd(), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    statuses = {}
    for name in JOBS:
        if os.path.exists(results_file(name, runs_dir)):
            statuses[name] = "finished before"
            continue
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            statuses[name] = "not started"
            continue
        started = time.monotonic()
        status = run_job(name, size, runs_dir, seconds, environment)
        statuses[name] = status
        print(
            json.dumps(
                {
                    "job": name,
                    "status": status,
                    "seconds": round(time.monotonic() - started, 1),
                }
            ),
            flush=True,
        )
    if results_dir:
        copy_results(runs_dir, results_dir, statuses)
    return statuses


def copy_results(runs_dir, results_dir, statuses):
    """Each finished job's results as `<job>.json` or `<job>.jsonl`, this
    call's statuses (`statuses.json`) and JAX's devices (`device.json`)."""
    import jax  # noqa: PLC0415

    os.makedirs(results_dir, exist_ok=True)
    for name in JOBS:
        source = results_file(name, runs_dir)
        if os.path.exists(source):
            extension = os.path.splitext(source)[1]
            shutil.copy(source, os.path.join(results_dir, name + extension))
    devices = [
        {"platform": device.platform, "kind": device.device_kind}
        for device in jax.devices()
    ]
    for file_name, content in (
        ("statuses.json", statuses),
        ("device.json", devices),
    ):
        with open(os.path.join(results_dir, file_name), "w") as file:
            json.dump(content, file, indent=1)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if _ACTION.value == "pack":
        size = pack(_PACK_DIR.value, _PYTHON_VERSION.value)
        print(f"{_PACK_DIR.value}: {size / 2**20:.1f} MiB")
        return
    statuses = train(
        _PACK_DIR.value,
        _RUNS_DIR.value,
        _RESULTS_DIR.value,
        _SIZE.value,
        _BUDGET_SECONDS.value,
    )
    print(json.dumps(statuses))


if __name__ == "__main__":
    flags.mark_flag_as_required("action")
    app.run(main)
