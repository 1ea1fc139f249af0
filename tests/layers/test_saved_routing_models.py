"""`.keras` files saved by an earlier version of the routing layers load
and give the outputs they gave then (see `saved/make_routing_models.py`)."""

import glob
import os

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import keras_capsules  # noqa: F401  (registers the layers)

SAVED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved")
NAMES = sorted(
    os.path.basename(path)[: -len(".keras")]
    for path in glob.glob(os.path.join(SAVED, "*.keras"))
)


class SavedRoutingModelsTest(tf.test.TestCase, parameterized.TestCase):
    def test_every_family_has_a_saved_file(self):
        for prefix in ("dynamic_routing", "em_routing", "heinsen_routing"):
            self.assertTrue(any(name.startswith(prefix) for name in NAMES))

    @parameterized.parameters(*NAMES)
    def test_loads_and_gives_the_saved_outputs(self, name):
        model = keras.saving.load_model(os.path.join(SAVED, f"{name}.keras"))
        saved = np.load(os.path.join(SAVED, f"{name}.npz"))
        inputs = [saved[f"input_{k}"] for k in range(len(model.inputs))]
        outputs = model(inputs if len(inputs) > 1 else inputs[0])
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        self.assertLen(outputs, len(saved.files) - len(inputs))
        for k, output in enumerate(outputs):
            expected = saved[f"output_{k}"]
            # The files load under every supported TensorFlow, whose
            # kernels sum in other orders: float32 entries then agree to
            # about 10 ulp of the output's scale (an entry near 0 that is
            # a sum of terms of that scale can move by that much).
            scale = float(np.max(np.abs(expected)))
            self.assertAllClose(output, expected, rtol=1e-5, atol=1e-5 * scale)


if __name__ == "__main__":
    tf.test.main()
