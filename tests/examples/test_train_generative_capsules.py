"""The generative-capsule example: the bound rises, probes and test-time
inference report, the model saves, exports and serves in a fresh process,
and `--evaluate_only` leaves the trained run as it was."""

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver

import keras_capsules  # noqa: F401  (registers the saved classes)
from examples import train_generative_capsules
from keras_capsules import trainers
from tests.examples.test_train_capsnet import (
    run_in_process,
    serve_in_fresh_process,
)

FLAGS = flags.FLAGS
# The settings the test trains: the script's default preset with 2
# computed pose steps instead of 3.
_TRAINED = "computed_top_poses:top_pose_refinement_steps=2"


class TrainGenerativeCapsulesTest(tf.test.TestCase):
    def test_trains_probes_exports_and_serves(self):
        directory = tempfile.mkdtemp()
        export_dir = os.path.join(directory, "export")
        results = run_in_process(
            train_generative_capsules,
            dataset="procedural_shapes",
            canvas_size=28,
            train_size=128,
            epochs=2,
            batch_size=32,
            learning_rate=3e-3,
            probe_train_size=128,
            probe_test_size=32,
            probe_epochs=1,
            rotations=["0"],
            vae_epochs=1,
            free_form_steps=3,
            free_form_examples=8,
            jit_compile="false",
            max_shift=2,
            preset=_TRAINED,
            model_dir=directory,
            export_dir=export_dir,
        )
        self.assertEqual(results["train_examples"], 128)
        self.assertEqual(results["flags"]["preset"], _TRAINED)
        self.assertIn("elbo", results["evaluation"]["test"])
        elbo = results["history"]["elbo"]
        self.assertLen(elbo, 2)
        self.assertGreater(elbo[-1], elbo[0])
        for protocol in ("upright", "matched"):
            for kind in ("t0", "t0_A0", "vae"):
                self.assertCountEqual(
                    results["probe"][protocol][kind], ["rotated_0", "affine"]
                )
        self.assertEqual(
            results["free_form"]["learning_rate"],
            trainers.FREE_FORM_LEARNING_RATES["gradient_ascent"],
        )
        for kind in ("t0", "t0_A0"):
            for way in ("amortised", "free_form"):
                self.assertCountEqual(
                    results["free_form"][f"{kind}_{way}"],
                    ["rotated_0", "affine"],
                )
        for name in ("templates.png", "reconstructions.png", "history.csv"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)))
        with open(os.path.join(directory, "history.csv")) as f:
            columns = f.readline().strip().split(",")
        for name in ("top_information", "val_top_information"):
            self.assertIn(name, columns)
        self.assertLen(results["history"]["val_top_information"], 2)
        self._evaluates_without_changing_the_run(directory)
        batch = np.random.default_rng(0).uniform(size=(3, 28, 28, 1))
        served = serve_in_fresh_process(
            export_dir, batch.astype(np.float32), directory
        )
        model = keras.models.load_model(os.path.join(directory, "model.keras"))
        self.assertAllClose(
            served["reconstruction"],
            model(batch.astype(np.float32)),
            atol=1e-5,
        )
        self.assertAllClose(
            served["top_presence_logits"],
            model.encode(batch.astype(np.float32))["top_presence_logits"],
            atol=1e-4,
        )

    def _evaluates_without_changing_the_run(self, directory):
        """`--evaluate_only` with the top presences computed writes
        `evaluation.json` and leaves `model.keras` and `results.json` as
        training wrote them."""
        model_path = os.path.join(directory, "model.keras")
        results_path = os.path.join(directory, "results.json")
        with open(results_path) as f:
            results = f.read()
        weights = keras.models.load_model(model_path).get_weights()
        FLAGS.mark_as_parsed()
        with flagsaver.flagsaver(
            dataset="procedural_shapes",
            canvas_size=28,
            train_size=128,
            probe_train_size=128,
            probe_test_size=32,
            probe_epochs=1,
            rotations=["0"],
            vae_epochs=0,
            free_form_steps=0,
            jit_compile="false",
            evaluate_only=True,
            preset=f"{_TRAINED},top_presence_refinement_steps=1",
            figures=False,
            model_dir=directory,
        ):
            train_generative_capsules.main(["prog"])
        with open(os.path.join(directory, "evaluation.json")) as f:
            evaluation = json.load(f)
        # The model evaluated: the trained one computing its presences.
        evaluated = evaluation["evaluated_model"]["config"]
        trained = keras.models.load_model(model_path).get_config()
        self.assertEqual(
            evaluated["config"],
            {**trained["config"], "top_presence_refinement_steps": 1},
        )
        self.assertEqual(trained["config"]["top_presence_refinement_steps"], 0)
        self.assertEqual(trained["config"]["top_pose_refinement_steps"], 2)
        self.assertEqual(
            evaluated["decoder"], json.loads(json.dumps(trained["decoder"]))
        )
        self.assertNotIn("evaluated_model", json.loads(results))
        self.assertCountEqual(
            evaluation["probe"]["upright"]["t0"], ["rotated_0", "affine"]
        )
        with open(results_path) as f:
            self.assertEqual(f.read(), results)
        reloaded = keras.models.load_model(model_path)
        self.assertEqual(reloaded.config.top_presence_refinement_steps, 0)
        self.assertLen(reloaded.get_weights(), len(weights))
        for saved, now in zip(weights, reloaded.get_weights()):
            self.assertAllEqual(saved, now)


if __name__ == "__main__":
    tf.test.main()
