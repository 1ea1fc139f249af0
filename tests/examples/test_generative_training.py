"""The generative-capsule examples' model builder: `--preset` and its
overrides reach the model it builds, and an evaluation of a saved model
takes the ways of computing its top layer that a given `--preset` has."""

import pytest
from absl import app, flags
from absl.testing import flagsaver

from examples import generative_training
from keras_capsules import models


def _parse_flags():
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


def test_build_model_takes_the_preset_and_its_overrides():
    _parse_flags()
    with flagsaver.flagsaver(
        preset="paper:num_top_capsules=5,num_template_capsules=4,"
        "template_size=6,off_pose_scale=0.1,min_pose_scale=0.05,"
        "initial_pose_scale=none"
    ):
        model = generative_training.build_model((20, 20, 1))
    expected = models.GenerativeCapsuleConfig(
        num_top_capsules=5,
        num_template_capsules=4,
        template_size=6,
        off_pose_scale=0.1,
        min_pose_scale=0.05,
    )
    assert model.config == expected
    decoder = model.decoder
    assert decoder.num_top_capsules == 5
    assert decoder.num_template_capsules == 4
    assert decoder.template_size == 6
    assert decoder.generative_model().off_pose_scale == 0.1
    assert decoder.min_pose_scale == 0.05


@pytest.mark.parametrize(
    "preset, match",
    [
        ("papers", "names a preset"),
        ("paper:num_capsules=3", "overrides fields"),
        ("paper:num_top_capsules=three", "needs a int"),
        ("paper:pose_posterior=normal", "pose_posterior"),
    ],
)
def test_a_preset_that_names_no_settings_is_a_usage_error(preset, match):
    _parse_flags()
    with flagsaver.flagsaver(preset=preset):
        with pytest.raises(app.UsageError, match=match):
            generative_training.check_settings_flags()


def test_a_given_preset_changes_a_saved_models_inference_and_none_does_not():
    _parse_flags()
    sizes = "num_top_capsules=3,num_template_capsules=3,template_size=4"
    with flagsaver.flagsaver(
        preset=f"paper:{sizes},top_pose_refinement_steps=1"
    ):
        model = generative_training.build_model((12, 12, 1))
    assert model.config.top_pose_refinement_steps == 1
    assert model.config.top_presence_refinement_steps == 0

    # No --preset given: the saved model's ways are kept.
    assert generative_training.apply_inference_flags(model) == {}
    assert model.config.top_pose_refinement_steps == 1

    with flagsaver.flagsaver(
        preset=f"paper:{sizes},top_pose_refinement_steps=1,"
        "top_presence_refinement_steps=2"
    ):
        given = generative_training.apply_inference_flags(model)
    assert given == {"top_presence_refinement_steps": 2}
    assert model.config.top_presence_refinement_steps == 2
    assert model.config.top_pose_refinement_steps == 1
    # The model saves what it now computes.
    assert model.get_config()["config"]["top_presence_refinement_steps"] == 2
