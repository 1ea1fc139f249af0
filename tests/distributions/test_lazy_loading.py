"""`keras_capsules.distributions` loads TensorFlow Probability at the
first use of one of its names, not at `import keras_capsules`, and a
generative model's `.keras` file still loads in a process that has
imported nothing else."""

import os
import tempfile

import numpy as np
import pytest

from keras_capsules import distributions
from tests.fresh_process import run_python
from tests.models.test_generative_capsule_autoencoder import (
    shapes,
    tiny_autoencoder,
)


def test_every_public_name_resolves_and_an_unknown_one_is_refused():
    for name in distributions.__all__:
        assert getattr(distributions, name) is not None, name
    # A module and a function never share a name: the function wins.
    assert callable(distributions.layer_information)
    with pytest.raises(AttributeError, match="capsule_kl"):
        _ = distributions.capsule_kl


def test_import_leaves_probability_unloaded_until_a_generative_model_loads():
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "model.keras")
    images = shapes(4)
    model = tiny_autoencoder()
    model.save(path)
    np.save(os.path.join(directory, "images.npy"), images)
    result = run_python(
        f"""
        import sys
        import keras
        import numpy as np
        import keras_capsules
        from keras_capsules import layers, losses, models, ops, trainers

        print("after import:", "tensorflow_probability" in sys.modules)
        model = keras.models.load_model({path!r})
        outputs = model(np.load({os.path.join(directory, "images.npy")!r}))
        np.save({os.path.join(directory, "outputs.npy")!r}, outputs)
        print("after loading:", "tensorflow_probability" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "after import: False" in result.stdout
    assert "after loading: True" in result.stdout
    np.testing.assert_allclose(
        np.load(os.path.join(directory, "outputs.npy")),
        model(images),
        atol=1e-6,
    )
