"""The generative-capsule ablation script runs a variant end to end and
appends one JSON line with the bound, the top layer's information per
epoch, the probes and the template presences."""

import json
import os
import tempfile

import pytest
from absl import flags
from absl.testing import flagsaver

from research import generative_capsules_ablations


# Long (a variant trained and probed); research scripts reproduce
# written-down measurements and are not the library: `make test-all` runs
# them.
@pytest.mark.slow
def test_one_variant_writes_its_line():
    directory = tempfile.mkdtemp()
    output = os.path.join(directory, "ablations.jsonl")
    # In a folder that does not exist yet: the script makes it.
    saved = os.path.join(directory, "runs", "tiny", "model.keras")
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    with flagsaver.flagsaver(
        name="tiny",
        train_size=128,
        test_size=64,
        epochs=2,
        preset="paper:num_top_capsules=12,num_template_capsules=10,"
        "template_size=8,top_pose_refinement_steps=1,"
        "top_presence_refinement_steps=1",
        output=output,
        save_to=saved,
        # What is tested is the variant's line, not its compilation.
        jit_compile="false",
    ):
        generative_capsules_ablations.main(["prog"])
    assert os.path.isfile(saved)
    with open(output) as file:
        (line,) = file.read().splitlines()
    result = json.loads(line)
    assert result["name"] == "tiny"
    assert len(result["val_top_information"]) == 2
    assert len(result["elbo"]) == 2
    assert 0.0 <= result["probe"]["t0"] <= 1.0
    single = result["single_parent"]
    assert single["every"] > -1e6 and single["best_single"] > -1e6
    assert 0.0 < single["top_share"] <= 1.0
    assert 0.0 < single["class_purity"] <= 1.0
    templates = result["template_presences"]
    assert 0.0 <= templates["present"] <= 10.0
    assert templates["information"] >= 0.0
    assert 0.0 <= templates["probe"] <= 1.0
