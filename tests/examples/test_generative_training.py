"""The generative-capsule examples' model builder: the decoder's flags
reach the model they build, and an evaluation of a saved model takes the
ways of computing its top layer that its command line gives."""

from absl import flags
from absl.testing import flagsaver

from examples import generative_training


def _parse_flags():
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


def test_build_model_passes_the_decoder_and_bound_flags():
    _parse_flags()
    with flagsaver.flagsaver(
        num_top_capsules=5,
        num_template_capsules=4,
        template_size=6,
        off_pose_scale=0.1,
        temperature=0.5,
        top_presence_probability=0.2,
        min_pose_scale=0.05,
        top_pose_refinement_steps=0,
        binary_top_presence_draws=3,
    ):
        model = generative_training.build_model((20, 20, 1))
    assert model.binary_top_presence_draws == 3
    decoder = model.decoder
    assert decoder.num_top_capsules == 5
    assert decoder.num_template_capsules == 4
    assert decoder.template_size == 6
    assert decoder.off_pose_scale == 0.1
    assert decoder.generative_model().off_pose_scale == 0.1
    assert decoder.temperature == 0.5
    assert decoder.top_presence_probability == 0.2
    assert decoder.min_pose_scale == 0.05


def test_inference_flags_given_change_a_saved_model_and_defaults_do_not():
    _parse_flags()
    with flagsaver.flagsaver(
        num_top_capsules=3,
        num_template_capsules=3,
        template_size=4,
        top_pose_refinement_steps=1,
    ):
        model = generative_training.build_model((12, 12, 1))
    assert model.top_pose_refinement_steps == 1
    assert model.top_presence_refinement_steps == 0

    # Neither flag given: the saved model's ways are kept.
    assert generative_training.apply_inference_flags(model) == {}
    assert model.top_pose_refinement_steps == 1
    assert model.top_presence_refinement_steps == 0

    with flagsaver.flagsaver(top_presence_refinement_steps=2):
        given = generative_training.apply_inference_flags(model)
    assert given == {"top_presence_refinement_steps": 2}
    assert model.top_presence_refinement_steps == 2
    assert model.top_pose_refinement_steps == 1
    # The model saves what it now computes.
    assert model.get_config()["top_presence_refinement_steps"] == 2
