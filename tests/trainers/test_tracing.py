"""The EM trainer traces each of its compiled sums once in a run, for a
batch axis of any size (datasets whose last batch is partial), and
TensorFlow's retracing warning never fires (issue 17, item 10)."""

import logging

import numpy as np
import tensorflow as tf

from keras_capsules import trainers


class CapturedWarnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


class TracingTest(tf.test.TestCase):
    def test_each_sum_traces_once_and_never_warns(self):
        rng = np.random.default_rng(0)
        labels = np.arange(1000) % 3
        features = rng.normal(size=(1000, 8)) + labels[:, None]
        features = features.astype("float32")

        def batches(part):
            return tf.data.Dataset.from_tensor_slices(
                (features[part], labels[part])
            ).batch(128)

        captured = CapturedWarnings()
        logger = tf.get_logger()
        logger.addHandler(captured)
        try:
            trainer = trainers.CapsuleRegressionEM(
                3, 2, schedule={"max_iterations": 12}
            )
            trainer.fit(
                batches(slice(0, 700)), batches(slice(700, 1000)), verbose=0
            )
            trainer.evaluate(batches(slice(0, 300)))
        finally:
            logger.removeHandler(captured)
        for name in ("_class_moment_sum", "_estep_sum", "_error_sum"):
            total = getattr(trainer, name)
            self.assertEqual(
                total._step.experimental_get_tracing_count(), 1, name
            )
            self.assertEqual(
                total._replica_fn.experimental_get_tracing_count(), 1, name
            )
        retracing = [m for m in captured.messages if "retracing" in m]
        self.assertEqual(retracing, [])


if __name__ == "__main__":
    tf.test.main()
