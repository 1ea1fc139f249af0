"""The dispatch to the backends' fast paths (`ops.fast_paths`), and the
neutral form of the value checks (`ops.labels`), which every backend
without graph assertions takes."""

import keras
import numpy as np
import tensorflow as tf

from keras_capsules.ops import fast_paths, labels


class FastPathTest(tf.test.TestCase):
    def test_tensorflow_has_its_fast_paths_and_neutral_forms_none(self):
        self.assertEqual(keras.backend.backend(), "tensorflow")
        self.assertIsNotNone(fast_paths.fast_path("small_matmul"))
        with fast_paths.neutral_forms():
            self.assertIsNone(fast_paths.fast_path("small_matmul"))
            with fast_paths.neutral_forms():
                self.assertIsNone(fast_paths.fast_path("small_matmul"))
            self.assertIsNone(fast_paths.fast_path("small_matmul"))
        self.assertIsNotNone(fast_paths.fast_path("small_matmul"))

    def test_an_unknown_name_is_refused(self):
        with self.assertRaisesRegex(ValueError, "'no_such_path'"):
            fast_paths.fast_path("no_such_path")

    def test_every_form_tensorflow_has_is_a_known_name(self):
        from keras_capsules.backend import tensorflow as forms

        self.assertContainsSubset(forms.__all__, fast_paths.NAMES)
        self.assertIsNone(fast_paths.fast_path("matmul"))


class NeutralChecksTest(tf.test.TestCase):
    def test_bad_ids_raise_where_they_have_values(self):
        with fast_paths.neutral_forms():
            self.assertAllEqual(
                labels.class_ids("loss", np.array([[0], [2]]), 3), [0, 2]
            )
            with self.assertRaisesRegex(
                ValueError,
                r"`loss` expects class ids in \[0, 3\)\. Received labels "
                r"\[0, 3\]",
            ):
                labels.class_ids("loss", np.array([0, 3]), 3)
            with self.assertRaisesRegex(ValueError, "whole-number class ids"):
                labels.class_ids("loss", np.array([0.5]), 3)

    def test_a_traced_check_without_values_is_left_out(self):
        with fast_paths.neutral_forms():
            ids = tf.function(lambda x: labels.class_ids("loss", x, 3))(
                tf.constant([0, 7])
            )
        self.assertAllEqual(ids, [0, 7])


if __name__ == "__main__":
    tf.test.main()
