"""The routing benchmark's arithmetic (its timings are measured, not
tested): the work it counts per shape and the fields it derives."""

import mmap
import os
import subprocess
import sys
import time
import unittest
from unittest import mock

import keras
import numpy as np
import tensorflow as tf

from bench import measure, routing
from keras_capsules import layers


def _fresh_pages(count):
    """An anonymous memory mapping of `count` pages that the kernel maps
    one 4 kB page at a time (no transparent huge pages), where it can be
    told so; skips the test elsewhere."""
    if not hasattr(mmap, "MADV_NOHUGEPAGE"):
        raise unittest.SkipTest("Needs Linux's madvise(MADV_NOHUGEPAGE).")
    fresh = mmap.mmap(-1, count * mmap.PAGESIZE)
    fresh.madvise(mmap.MADV_NOHUGEPAGE)
    return fresh


class RoutingBenchTest(tf.test.TestCase):
    def test_dynamic_routing_work_counted_by_hand(self):
        shape = routing.SHAPES["dynamic_1152x8_to_10x16_b128"]
        votes = 2 * 1152 * 10 * 8 * 16
        # 3 iterations of a weighted sum and an agreement over 1152x10x16.
        routing_work = 2 * 3 * 2 * 1152 * 10 * 16
        self.assertEqual(
            routing.flops_per_example(shape), 3 * (votes + routing_work)
        )

    def test_every_routing_family_has_a_step_at_the_classifier_shapes(self):
        from bench import routing_shapes
        from keras_capsules import models

        families = {f"families_{r}" for r in models.ROUTINGS} - {
            "families_regression"
        }
        self.assertEqual(set(routing_shapes.FAMILY_SHAPES), families)
        rng = np.random.default_rng(0)
        for name in sorted(families):
            shape = routing.SHAPES[name]
            logits, poses = shape["layer"]()(shape["inputs"](rng))
            self.assertEqual(tuple(poses.shape), (32, 10, 4, 4), name)

    def test_conv_em_counts_every_position_and_parent_type(self):
        shape = routing.SHAPES["em_conv_k3_8_to_16_6x6_b32"]
        pairs = 4 * 4 * 16 * (3 * 3 * 8)  # positions x types x children
        self.assertEqual(shape["vote_macs"], pairs * 64)
        self.assertEqual(shape["vote_elements"], pairs * 16)

    def test_bounds_follow_the_machine_limits(self):
        name = "heinsen_64_to_5_b20"
        flops = routing.flops_per_example(routing.SHAPES[name])
        result = {"examples_per_second": 1000.0, "seconds_per_step": 0.02}
        limits = {"matmul_gflops": 100.0, "copy_gb_per_s": 10.0}
        bounded = routing.with_bounds(result, name, limits)
        self.assertAllClose(bounded["compute_bound"], 1e11 / flops, rtol=1e-3)
        self.assertAllClose(
            bounded["percent_of_bound"], 100 * 1000 * flops / 1e11, atol=0.01
        )
        vote_bytes = 4 * 64 * 5 * 4 * 4 * 20
        self.assertAllClose(
            bounded["vote_passes"], 0.02 * 1e10 / vote_bytes, atol=0.05
        )
        failed = {"case": name, "error": "..."}
        self.assertEqual(routing.with_bounds(failed, name, limits), failed)

    def test_each_repetition_times_its_steps_and_divides_by_them(self):
        calls = []
        seconds = measure.best_seconds(
            lambda: calls.append(time.sleep(0.002)), 3, steps=4
        )
        self.assertLen(calls, 1 + 3 * 4)  # One warm-up call.
        self.assertBetween(seconds, 0.002, 0.008)

    def test_steps_lasting_covers_the_minimum_time(self):
        self.assertEqual(measure.steps_lasting(lambda: None, 0.0), 1)
        steps = measure.steps_lasting(lambda: time.sleep(0.01), 0.1)
        self.assertBetween(steps, 2, 10)  # About 10 for a 10 ms step.

    def test_planned_memory_is_the_largest_plan_of_the_step_function(self):
        directory = self.get_temp_dir()
        reports = {
            "module_0001.a_inference_step_12__XlaMustCompile.cpu_after_"
            "optimizations-memory-usage-report.txt": 3 * 2**20,
            "module_0002.a_inference_step_40__XlaMustCompile.cpu_after_"
            "optimizations-memory-usage-report.txt": 5 * 2**20,
            "module_0003.a_inference_other_7__XlaMustCompile.cpu_after_"
            "optimizations-memory-usage-report.txt": 9 * 2**20,
        }
        for file_name, total in reports.items():
            with open(os.path.join(directory, file_name), "w") as report:
                report.write(f"Total bytes used: {total} (x MiB)\n")
        self.assertEqual(measure.xla_planned_memory_mb(directory), 5.0)
        self.assertIsNone(measure.xla_planned_memory_mb(directory, "absent"))
        self.assertIsNone(measure.xla_planned_memory_mb(directory + "/none"))

    def test_a_case_process_sees_the_environment_it_is_given(self):
        directory = self.get_temp_dir()
        with open(os.path.join(directory, "echo_case.py"), "w") as module:
            module.write(
                "import json, os, sys\n"
                "print('first line')\n"
                "print(json.dumps({'argv': sys.argv[1:], "
                "'flag': os.environ.get('BENCH_TEST_FLAG')}))\n"
            )
        environment = {"PYTHONPATH": directory, "BENCH_TEST_FLAG": "on"}
        result = measure.run_case_in_subprocess(
            "echo_case", "a:xla", ["--repeats=2"], environment=environment
        )
        self.assertEqual(
            result, {"argv": ["--case=a:xla", "--repeats=2"], "flag": "on"}
        )
        self.assertNotIn("BENCH_TEST_FLAG", os.environ)
        failed = measure.run_case_in_subprocess("echo_case", "a", [])
        self.assertEqual(failed["case"], "a")
        self.assertIn("No module named", failed["error"])

    def test_run_cases_measures_one_case_here_or_each_in_its_own(self):
        measured = []

        def run_case(case):
            measured.append(case)
            return {"case": case}

        with mock.patch("builtins.print") as printed:
            measure.run_cases(["prog"], "m", "a:xla", run_case, ["b"], [])
        self.assertEqual(measured, ["a:xla"])
        printed.assert_called_once_with('{"case": "a:xla"}', flush=True)
        with mock.patch.object(measure, "run_cases_in_subprocesses") as each:
            measure.run_cases(["prog"], "m", None, run_case, ["b", "c"], ["-f"])
        each.assert_called_once_with("m", ["b", "c"], ["-f"], None)
        self.assertEqual(measured, ["a:xla"])
        # Each result from its subprocess passes through `annotate`.
        with (
            mock.patch.object(
                measure,
                "run_case_in_subprocess",
                lambda module, case, flags: {"case": case},
            ),
            mock.patch("builtins.print") as printed,
        ):
            measure.run_cases(
                ["prog"],
                "m",
                None,
                run_case,
                ["b", "c"],
                [],
                annotate=lambda case, result: {**result, "seen": case},
            )
        self.assertEqual(
            [call.args[0] for call in printed.call_args_list],
            ['{"case": "b", "seen": "b"}', '{"case": "c", "seen": "c"}'],
        )
        with self.assertRaisesRegex(Exception, "Unexpected arguments"):
            measure.run_cases(["prog", "x"], "m", "a", run_case, [], [])

    def test_peak_memory_without_allocator_statistics_is_the_processes(self):
        # TensorFlow keeps no CPU allocator statistics where oneDNN is off:
        # the peak is then the process's resident set since the reset.
        if not os.path.exists("/proc/self/clear_refs"):
            self.skipTest("The process's peak is reset through Linux /proc.")
        with mock.patch.object(measure, "_allocator_info", lambda: None):
            held = np.ones(2**26)  # 512 MB, resident: reset must not drop it.
            measure.reset_peak_memory()
            before = measure.memory_in_use_mb()
            self.assertGreater(before, 500)
            del held
            after_free = measure.memory_in_use_mb()
            self.assertLess(after_free, before - 400)
            measure.reset_peak_memory()
            start = measure.memory_in_use_mb()
            block = np.ones(2**25)  # 256 MB
            del block
            self.assertBetween(measure.peak_memory_mb() - start, 250, 300)

    def test_page_faults_count_fresh_pages_touched(self):
        # An anonymous mapping of fresh pages, kept off huge pages: each
        # page written faults once, the first time only.
        pages = 4096
        with _fresh_pages(pages) as fresh:
            before = measure.page_faults()
            for page in range(pages):
                fresh[page * mmap.PAGESIZE] = 1
            first_touch = measure.page_faults() - before
            before = measure.page_faults()
            for page in range(pages):
                fresh[page * mmap.PAGESIZE] = 2
            second_touch = measure.page_faults() - before
        self.assertBetween(first_touch, pages, pages + 200)
        self.assertLess(second_touch, 200)

    def test_time_step_reports_the_faults_of_the_timed_steps(self):
        def step():
            with _fresh_pages(64) as fresh:
                for page in range(64):
                    fresh[page * mmap.PAGESIZE] = 1

        timing = measure.time_step(step, batch_size=4, repeats=2)
        self.assertBetween(timing["page_faults_per_step"], 64, 120)
        self.assertEqual(timing["batch_size"], 4)

    def test_device_names_the_cpu_and_the_onednn_setting(self):
        if measure.on_gpu():
            self.skipTest("A GPU's name is what the record gives there.")
        self.assertRegex(
            measure.device_name(),
            r"^CPU, \d+ cores, .+, TF_ENABLE_ONEDNN_OPTS=(0|1|default)$",
        )

    def test_xla_writes_the_plan_that_is_read_back(self):
        # XLA reads its flags once per process: a fresh one.
        program = (
            "import sys, tensorflow as tf\n"
            "from bench import measure\n"
            "measure.record_xla_memory_plans(sys.argv[1])\n"
            "@tf.function(jit_compile=True)\n"
            "def double_sine(x):\n"
            "    return tf.sin(x) * 2.0\n"
            "double_sine(tf.zeros((2**20,)))\n"
            "print(measure.xla_planned_memory_mb(sys.argv[1], 'double_sine'))\n"
        )
        directory = self.get_temp_dir()
        result = subprocess.run(
            [sys.executable, "-c", program, directory],
            capture_output=True,
            text=True,
            check=True,
            cwd=os.path.dirname(os.path.dirname(measure.__file__)),
        )
        # A 4 MB input and a 4 MB output, nothing else.
        self.assertBetween(float(result.stdout.split()[-1]), 4.0, 8.5)

    def test_forward_backward_step_in_each_mode_gives_one_gradient(self):
        layer = layers.DynamicRouting(2, 3)
        rng = np.random.default_rng(0)
        inputs = [
            tf.constant(rng.normal(size=(2, 4)), tf.float32),
            tf.constant(rng.normal(size=(2, 4, 1, 5)), tf.float32),
        ]
        results = [
            measure.forward_backward_step(layer, inputs, mode)()
            for mode in ("eager", "graph", "xla")
        ]
        for gradients in results[1:]:
            for got, want in zip(gradients, results[0]):
                self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)
        with self.assertRaisesRegex(ValueError, "Unknown mode 'jit'"):
            measure.forward_backward_step(layer, inputs, "jit")

    def test_empty_step_times_the_harness_around_an_identity(self):
        inputs = [
            tf.constant([[1.0, -2.0]]),
            tf.constant([[[0.5], [3.0]]]),
        ]
        # The step it times: the gradients of the sum of squares, 2 x.
        step = measure.forward_backward_step(
            keras.layers.Identity(), inputs, "graph"
        )
        for got, given in zip(step(), inputs):
            self.assertAllClose(got, 2.0 * given.numpy())
        with mock.patch.object(measure, "MIN_REPEAT_SECONDS", 0.05):
            seconds = measure.empty_step_seconds(inputs, "xla", repeats=2)
        # Per step (a call of a compiled step, about 0.4 ms on 2 cores),
        # not per repetition of at least 50 ms.
        self.assertBetween(seconds, 1e-6, 0.02)


if __name__ == "__main__":
    tf.test.main()
