"""`.keras` files saved by earlier versions of the library load and give
the outputs they gave then.

`saved/d7cdef0/`: models around each routing layer, saved before the
routing layers shared a base (`saved/make_d7cdef0_models.py`).
`saved/e2935bd/`: a model around each layer case of the conformance table
and one of each model builder, saved before every routing layer took one
form (`saved/make_e2935bd_models.py`).
"""

import glob
import os

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import keras_capsules  # noqa: F401  (registers the layers)

SAVED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved")
FILES = sorted(
    os.path.relpath(path, SAVED)[: -len(".keras")]
    for path in glob.glob(os.path.join(SAVED, "*", "*.keras"))
)


def _as_list(values):
    return list(values) if isinstance(values, (list, tuple)) else [values]


class SavedModelsTest(tf.test.TestCase, parameterized.TestCase):
    def test_every_version_has_its_files(self):
        for version, prefixes in (
            ("d7cdef0", ("dynamic_routing", "em_routing", "heinsen_routing")),
            ("e2935bd", ("capsnet", "capsule_classifier_em", "heinsen_image")),
        ):
            for prefix in prefixes:
                start = f"{version}/{prefix}"
                self.assertTrue(any(name.startswith(start) for name in FILES))

    @parameterized.parameters(*FILES)
    def test_loads_and_gives_the_saved_outputs(self, name):
        model = keras.saving.load_model(os.path.join(SAVED, f"{name}.keras"))
        saved = np.load(os.path.join(SAVED, f"{name}.npz"))
        inputs = [
            saved[key]
            for key in sorted(k for k in saved.files if k.startswith("input_"))
        ]
        outputs = _as_list(
            model(inputs if len(inputs) > 1 else inputs[0], training=False)
        )
        self.assertLen(outputs, len(saved.files) - len(inputs))
        for k, output in enumerate(outputs):
            expected = saved[f"output_{k}"]
            # The files load under every supported TensorFlow, whose
            # kernels sum in other orders: float32 entries then agree to
            # about 10 ulp of the output's scale (an entry near 0 that is
            # a sum of terms of that scale can move by that much).
            scale = float(np.max(np.abs(expected)))
            self.assertAllClose(output, expected, rtol=1e-5, atol=1e-5 * scale)
        # Saved again by this release, the model loads and computes the
        # same (the adapters of former forms save under their own names).
        path = self.create_tempfile(file_path="again.keras").full_path
        model.save(path)
        again = _as_list(
            keras.saving.load_model(path)(
                inputs if len(inputs) > 1 else inputs[0], training=False
            )
        )
        for got, want in zip(again, outputs):
            self.assertAllClose(got, want, rtol=1e-6, atol=1e-6)


if __name__ == "__main__":
    tf.test.main()
