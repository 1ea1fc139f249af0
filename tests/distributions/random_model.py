"""A random float64 `GenerativeCapsuleModel` with the NumPy parameters of
its conditional, for the checks of the top layer against enumeration."""

import numpy as np
import tensorflow as tf

from keras_capsules import distributions


def random_model(rng, n_p, n_c, temperature):
    """A float64 `GenerativeCapsuleModel` and the NumPy parameters of its
    conditional (templates and pixels play no part here)."""
    params = {
        "top_presence_logits": rng.normal(-1.0, 1.0, n_p),
        "affinities": rng.uniform(0.2, 2.0, (n_p, n_c)),
        "presence_logits": rng.normal(0.0, 2.0, (n_p + 1, n_c)),
        "pose_offsets": rng.normal(0.0, 0.3, (n_p, n_c, 6)),
        "pose_scales": rng.uniform(0.2, 0.6, (n_p, n_c)),
        "clutter_affinity": 0.1,
        "clutter_pose_scale": 1.0,
        "off_pose_scale": 1.0,
    }
    model = distributions.GenerativeCapsuleModel(
        top_presence_logits=tf.constant(params["top_presence_logits"]),
        log_affinities=tf.constant(np.log(params["affinities"])),
        presence_logits=tf.constant(params["presence_logits"]),
        pose_offsets=tf.constant(params["pose_offsets"]),
        pose_scales=tf.constant(params["pose_scales"]),
        templates=tf.zeros((n_c, 2, 2, 1), tf.float64),
        alphas=tf.zeros((n_c, 2, 2, 1), tf.float64),
        image_size=(4, 4),
        pixel_scale=0.2,
        clutter_log_affinity=np.log(params["clutter_affinity"]),
        clutter_pose_scale=params["clutter_pose_scale"],
        off_pose_scale=params["off_pose_scale"],
        temperature=temperature,
    )
    return model, params
