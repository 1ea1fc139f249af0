"""Times the XLA steps under XLA:CPU's own compiler options (`XLA_FLAGS`),
to see whether any of them moves the routing steps towards the machine's
limits without a change to the code.

Each measurement is one case of `bench.routing` (XLA mode) or the small
matrix-capsule training step of `bench.em_routing`, in a fresh process
whose `XLA_FLAGS` is the flag set (XLA reads its flags once per
process). The flag sets alternate within each round, so a slow spell of
a shared machine falls on every set alike. Prints one JSON object per
measurement, the case's own fields plus `xla_flags` and `round`, after
one line of the machine's limits (`bench.machine`), measured in the same
run. Measures; never asserts.

Usage: python -m bench.xla_cpu_flags [--rounds=2] [--repeats=5]
"""

import json

from absl import app, flags

from bench import machine, measure

# Options of the XLA:CPU compiler in TensorFlow 2.21 that could change
# what a step costs (`XLA_FLAGS=--help` lists them all). `fast_math`
# honours NaNs, infinities, division and library functions by default,
# so it allows only reassociation and fused multiply-adds; even so, EM
# routing compiled with it loses float32 variances that the two-pass
# form keeps (research/speed.md), so the
# library and its examples use none of these.
FLAG_SETS = {
    "none": "",
    "fast_math": "--xla_cpu_enable_fast_math=true",
    "xnnpack_fusions": (
        "--xla_cpu_experimental_xnn_fusion_type=dot,eltwise,reduce"
    ),
    "onednn": "--xla_cpu_use_onednn=true",
    "vector_width_512": "--xla_cpu_prefer_vector_width=512",
}

# (module, case, extra flags) of every timed step.
CASES = {
    "dynamic": (
        "bench.routing",
        "dynamic_1152x8_to_10x16_b128:xla",
        [],
    ),
    "em_conv": ("bench.routing", "em_conv_k3_8_to_16_6x6_b32:xla", []),
    "em_class": ("bench.routing", "em_class_16x3x3_to_10_b32:xla", []),
    "heinsen_b20": ("bench.routing", "heinsen_64_to_5_b20:xla", []),
    "small_matrix_capsule_training_step": (
        "bench.em_routing",
        "small_model:train",
        ["--image_size=28"],
    ),
}


def define_flags():
    """Defines the script's flags. Called only when it runs as a program,
    so that tests can import it beside the benchmarks it runs (which
    define flags of the same names)."""
    flags.DEFINE_integer("rounds", 2, "Rounds over every flag set.")
    flags.DEFINE_integer("repeats", 5, "Timed repetitions; best kept.")
    flags.DEFINE_list(
        "flag_sets", list(FLAG_SETS), "Flag sets to compare (names)."
    )
    flags.DEFINE_list("cases", list(CASES), "Steps to time (names).")


def run_with_xla_flags(xla_flags, module, case, flags_of_case):
    """`measure.run_case_in_subprocess(module, case, flags_of_case)` with
    `XLA_FLAGS` set to `xla_flags` in the child process."""
    return measure.run_case_in_subprocess(
        module, case, flags_of_case, environment={"XLA_FLAGS": xla_flags}
    )


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    options = flags.FLAGS
    for names, known, flag in (
        (options.flag_sets, FLAG_SETS, "--flag_sets"),
        (options.cases, CASES, "--cases"),
    ):
        for name in names:
            if name not in known:
                raise app.UsageError(
                    f"Unknown name {name!r} in {flag}. Expected names from "
                    f"{sorted(known)}."
                )
    print(json.dumps({"name": "machine", **machine.limits()}), flush=True)
    for round_index in range(options.rounds):
        for case_name in options.cases:
            module, case, extra = CASES[case_name]
            for set_name in options.flag_sets:
                result = run_with_xla_flags(
                    FLAG_SETS[set_name],
                    module,
                    case,
                    [f"--repeats={options.repeats}", *extra],
                )
                print(
                    json.dumps(
                        {
                            "case": case_name,
                            "xla_flags": FLAG_SETS[set_name],
                            "round": round_index,
                            **result,
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    define_flags()
    app.run(main)
