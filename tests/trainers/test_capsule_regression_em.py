"""The EM trainer against NumPy versions of eqs. 22, 26 and 28."""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_capsules import ops as capsule_ops
from keras_capsules import trainers
from keras_capsules.trainers import architectures
from tests.fresh_process import TWO_CPU_DEVICES, run_python


def toy_data(n=600, p=8, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    centres = rng.normal(0.0, 1.0, (classes, p))
    x = centres[y] + rng.normal(0.0, 0.9, (n, p))
    return x.astype("float32"), y


def as_dataset(x, y, batch=128):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)


def numpy_em_update(x, y, kernel, nu):
    """Eqs. 22 and 26 for one multiclass model, example by example (the
    ops of eqs. 16 and 19, tested on their own, called once for all)."""
    m, d = kernel.shape[1:]
    x = x.astype(np.float64)
    gram = x.T @ x
    all_means = np.einsum("lp,pjd->ljd", x, kernel)
    all_probabilities = capsule_ops.capsule_regression_probabilities(
        all_means
    ).numpy()
    all_posteriors = capsule_ops.capsule_regression_posterior_means(
        all_means, y
    ).numpy()
    numerator = np.zeros_like(kernel, np.float64)
    for x_l, y_l, means, probabilities, posterior in zip(
        x, y, all_means, all_probabilities, all_posteriors
    ):
        ratio = np.max(np.delete(probabilities, y_l)) / probabilities[y_l]
        if ratio <= nu:
            posterior = means  # eq. 26: the prior mean.
        numerator += np.einsum("p,jd->pjd", x_l, posterior)
    solved = np.linalg.solve(gram, numerator.reshape(len(gram), m * d))
    return solved.reshape(kernel.shape)


class CapsuleRegressionEMTest(tf.test.TestCase):
    def test_em_update_matches_eqs_22_and_26(self):
        x, y = toy_data(n=200, p=5)
        for nu in (0.0, 0.6):
            trainer = trainers.CapsuleRegressionEM(3, 2)
            kernel = trainer.prepare(as_dataset(x, y))
            updated, _ = trainer.em_update(as_dataset(x, y), kernel, nu)
            expected = numpy_em_update(x, y, kernel[0], nu)
            self.assertAllClose(updated[0], expected, rtol=2e-4, atol=1e-6)

    def test_subspace_initialisation_is_eq_28(self):
        x, y = toy_data()
        trainer = trainers.CapsuleRegressionEM(3, 2)
        kernel = trainer.prepare(as_dataset(x, y))[0]  # (p, m, d)
        for i in range(3):
            x_i = x[y == i].astype(np.float64)
            xi, v = np.linalg.eigh(x_i.T @ x_i / len(x_i))
            for a in range(2):
                expected = v[:, -1 - a] / np.sqrt(2 * xi[-1 - a])
                actual = kernel[:, i, a]
                # Eigenvectors are defined up to sign.
                self.assertAllClose(
                    actual * np.sign(actual @ expected),
                    expected,
                    rtol=1e-6,
                    atol=1e-9,
                )

    def test_plain_em_never_decreases_log_likelihood(self):
        x, y = toy_data()
        trainer = trainers.CapsuleRegressionEM(
            3,
            2,
            schedule=trainers.EMSchedule(
                momentum=0.0,
                thresholds=(0.0,),
                patience=(1000,),
                max_iterations=25,
            ),
        )
        history = trainer.fit(as_dataset(x, y), verbose=0)
        log_likelihood = np.array(history["log_likelihood"])
        self.assertLen(log_likelihood, 25)
        # Float32 sums of 600 terms carry ~1e-6 relative rounding.
        self.assertTrue(
            np.all(
                np.diff(log_likelihood) >= -1e-6 * np.abs(log_likelihood[1:])
            ),
            np.diff(log_likelihood),
        )
        self.assertGreater(log_likelihood[-1], log_likelihood[0] + 1.0)

    def test_protocol_rounds_end_and_keep_best_model(self):
        x, y = toy_data(seed=1)
        xv, yv = toy_data(n=300, seed=2)
        trainer = trainers.CapsuleRegressionEM(
            3, 2, schedule={"thresholds": (0.5, 0.0), "patience": (4, 2)}
        )
        history = trainer.fit(as_dataset(x, y), as_dataset(xv, yv), verbose=0)
        self.assertEqual(history["round"][0], 0)
        self.assertEqual(history["round"][-1], 1)
        self.assertAlmostEqual(
            trainer.evaluate(as_dataset(xv, yv)),
            min(history["validation_error"]),
            places=6,
        )
        layer = trainer.to_layer()
        predicted = np.argmax(layer(xv), -1)
        self.assertAllEqual(predicted, trainer.predict(xv))

    def test_resumes_from_checkpoint_as_if_never_stopped(self):
        x, y = toy_data(seed=4)
        xv, yv = toy_data(n=200, seed=5)
        schedule = trainers.EMSchedule(thresholds=(0.6, 0.0), patience=(3, 3))
        path = os.path.join(tempfile.mkdtemp(), "em_state.npz")
        interrupted = trainers.CapsuleRegressionEM(
            3, 2, schedule=schedule.replace(max_iterations=4)
        )
        interrupted.fit(
            as_dataset(x, y),
            as_dataset(xv, yv),
            verbose=0,
            checkpoint_path=path,
            checkpoint_every=2,
        )
        resumed = trainers.CapsuleRegressionEM(
            3, 2, schedule=schedule.replace(max_iterations=12)
        )
        history = resumed.fit(
            as_dataset(x, y),
            as_dataset(xv, yv),
            verbose=0,
            checkpoint_path=path,
        )
        uninterrupted = trainers.CapsuleRegressionEM(
            3, 2, schedule=schedule.replace(max_iterations=12)
        )
        expected = uninterrupted.fit(
            as_dataset(x, y), as_dataset(xv, yv), verbose=0
        )
        self.assertLen(history["error"], len(expected["error"]))
        self.assertAllClose(
            history["log_likelihood"], expected["log_likelihood"], rtol=1e-6
        )
        self.assertAllClose(resumed.kernel, uninterrupted.kernel, rtol=1e-5)
        wrong_shape = trainers.CapsuleRegressionEM(3, 4, schedule=schedule)
        with self.assertRaisesRegex(ValueError, "new checkpoint_path"):
            wrong_shape.fit(as_dataset(x, y), verbose=0, checkpoint_path=path)

    def test_offset_and_centring_train(self):
        x, y = toy_data()
        x = x + 5.0  # Far from the origin: centring and an offset matter.
        trainer = trainers.CapsuleRegressionEM(
            3,
            2,
            use_offset=True,
            center_inputs=True,
            schedule={"max_iterations": 30},
        )
        trainer.fit(as_dataset(x, y), verbose=0)
        self.assertLess(trainer.evaluate(as_dataset(x, y)), 0.15)
        layer = trainer.to_layer()
        self.assertAllClose(layer.input_mean, x.mean(0), rtol=1e-5)
        self.assertAllEqual(np.argmax(layer(x), -1), trainer.predict(x))

    def test_ensembles_train_and_vote(self):
        x, y = toy_data(n=900, classes=4, seed=3)
        for architecture, count in (("one_vs_all", 4), ("all_vs_all", 6)):
            trainer = trainers.CapsuleRegressionEM(
                4,
                2,
                architecture=architecture,
                schedule={"max_iterations": 30},
            )
            trainer.fit(as_dataset(x, y), verbose=0)
            self.assertLen(trainer.binary_layers(), count)
            self.assertLess(trainer.evaluate(as_dataset(x, y)), 0.25)

    def test_membership_tables(self):
        ova = architectures.membership("one_vs_all", 3)
        self.assertAllEqual(ova[1], [[0, 1, 0], [1, 0, 1]])
        ava = architectures.membership("all_vs_all", 3)
        self.assertAllEqual(ava[2], [[0, 1, 0], [0, 0, 1]])  # pair (1, 2)
        targets, weights = architectures.targets_and_weights(
            ava, np.array([0, 2])
        )
        self.assertAllEqual(weights, [[1, 1, 0], [0, 1, 1]])
        self.assertAllEqual(targets[1, 1:], [1, 1])

    def test_all_vs_all_vote(self):
        table = architectures.membership("all_vs_all", 3)
        # Pairs (0,1), (0,2), (1,2): 1 beats 0, 2 beats 0, 1 beats 2.
        probabilities = np.array(
            [[[0.4, 0.6], [0.3, 0.7], [0.8, 0.2]]], "float32"
        )
        predicted = architectures.predict_classes(
            "all_vs_all", table, probabilities
        )
        self.assertAllEqual(predicted, [1])

    def test_bad_arguments_raise(self):
        with self.assertRaisesRegex(ValueError, "Unknown capsule regression"):
            trainers.CapsuleRegressionEM(3, 2, architecture="pairs")
        with self.assertRaisesRegex(ValueError, "one value per round"):
            trainers.EMSchedule(thresholds=(0.5,), patience=(1, 2))
        with self.assertRaisesRegex(ValueError, r"nu in \[0, 1\]"):
            trainers.EMSchedule(thresholds=(2.0,), patience=(1,))
        with self.assertRaisesRegex(
            ValueError, r"momentum.*Received: momentum=1.0"
        ):
            trainers.EMSchedule(momentum=1.0)
        with self.assertRaisesRegex(ValueError, "max_iterations"):
            trainers.EMSchedule(max_iterations=0)
        with self.assertRaisesRegex(
            ValueError, "Expected EM schedule settings"
        ):
            trainers.CapsuleRegressionEM(3, 2, schedule=0.5)
        with self.assertRaisesRegex(ValueError, "Unknown EM schedule preset"):
            trainers.CapsuleRegressionEM(3, 2, schedule="fast")
        self.assertEqual(
            trainers.CapsuleRegressionEM(3, 2, schedule="paper").schedule,
            trainers.EMSchedule(),
        )
        x, y = toy_data(n=30)
        with self.assertRaisesRegex(ValueError, "Classes without any"):
            trainers.CapsuleRegressionEM(4, 2).fit(as_dataset(x, y), verbose=0)

    def test_sums_agree_under_mirrored_strategy(self):
        result = run_python(
            TWO_CPU_DEVICES,
            """
            import numpy as np
            from keras_capsules import trainers
            rng = np.random.default_rng(0)
            y = rng.integers(0, 3, 256)
            x = (rng.normal(size=(256, 5)) + y[:, None]).astype("float32")
            data = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
            single = trainers.CapsuleRegressionEM(3, 2)
            kernel = single.prepare(data)
            expected, _ = single.em_update(data, kernel, 0.0)
            strategy = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
            with strategy.scope():
                mirrored = trainers.CapsuleRegressionEM(3, 2)
                np.testing.assert_allclose(mirrored.prepare(data), kernel,
                                           rtol=1e-6, atol=1e-9)
                updated, _ = mirrored.em_update(data, kernel, 0.0)
            np.testing.assert_allclose(updated, expected, rtol=1e-4, atol=1e-6)
            print("replicas", strategy.num_replicas_in_sync)
            """,
        )
        self.assertIn("replicas 2", result.stdout, result.stderr[-3000:])


if __name__ == "__main__":
    tf.test.main()
