"""The generative-capsule examples' model builder: the decoder's flags
reach the model they build."""

from absl import flags
from absl.testing import flagsaver

from examples import generative_training


def test_build_model_passes_the_decoder_flags():
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    with flagsaver.flagsaver(
        num_top_capsules=5,
        num_template_capsules=4,
        template_size=6,
        off_pose_scale=0.1,
        temperature=0.5,
        top_presence_probability=0.2,
        min_pose_scale=0.05,
        top_pose_refinement_steps=0,
    ):
        model = generative_training.build_model((20, 20, 1))
    decoder = model.decoder
    assert decoder.num_top_capsules == 5
    assert decoder.num_template_capsules == 4
    assert decoder.template_size == 6
    assert decoder.off_pose_scale == 0.1
    assert decoder.generative_model().off_pose_scale == 0.1
    assert decoder.temperature == 0.5
    assert decoder.top_presence_probability == 0.2
    assert decoder.min_pose_scale == 0.05
