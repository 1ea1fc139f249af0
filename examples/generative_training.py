"""What the two generative-capsule scripts share: the model's flags, the
model they describe and the training images' pipeline.

The flags' defaults train the paper's bound, except
`--top_pose_refinement_steps` (docs/guides/generative-capsules.md), which each
script sets.
"""

import keras
import numpy as np
import tensorflow as tf
from absl import flags

from examples import run_flags, runs
from keras_capsules import distributions, models, trainers
from keras_capsules.datasets import epoch_order, image_transforms

# The run-level flags this module reads.
_BATCH_SIZE, LEARNING_RATE = run_flags.request(
    __name__, "batch_size", "learning_rate"
)

CANVAS_SIZE = flags.DEFINE_integer(
    "canvas_size", 40, "Images are centred on a square canvas this large."
)
POSE_POSTERIOR = flags.DEFINE_enum(
    "pose_posterior",
    "delta",
    list(models.generative_capsules.POSE_POSTERIORS),
    "Delta (MAP) poses, as in the paper, or Gaussian poses.",
)
MAX_SHIFT = flags.DEFINE_integer(
    "max_shift",
    0,
    "Training images are shifted by up to this many pixels along each axis, "
    "a new shift every epoch (0: centred, the paper's MNIST training set).",
)
TOP_KL_WARMUP_STEPS = flags.DEFINE_integer(
    "top_kl_warmup_steps",
    0,
    "Steps over which the top layer's KL weight rises from 0 to 1.",
)
STOP_GRADIENT = flags.DEFINE_boolean(
    "stop_gradient_between_layers",
    False,
    "The top layer's terms do not train the template encoder (SCAE).",
)
COORDINATE_CHANNELS = flags.DEFINE_boolean(
    "coordinate_channels",
    False,
    "The template encoder's pooled poses see where their parts were found.",
)
NORMALIZE_TOP_INPUTS = flags.DEFINE_boolean(
    "normalize_top_encoder_inputs",
    False,
    "Batch-normalise the template capsules the top encoder reads.",
)
PRESENCE_INFORMATION_WEIGHT = flags.DEFINE_float(
    "presence_information_weight",
    0.0,
    "Adds this multiple of the top presences' information to the bound.",
)
SELECTION_INFORMATION_WEIGHT = flags.DEFINE_float(
    "selection_information_weight",
    0.0,
    "Adds this multiple of the image's information about which parents "
    "explain its templates to the bound.",
)
TEMPLATE_PRESENCE_INFORMATION_WEIGHT = flags.DEFINE_float(
    "template_presence_information_weight",
    0.0,
    "Adds this multiple of the template presences' information to the bound.",
)
TEMPLATE_COUNT_WEIGHT = flags.DEFINE_float(
    "template_count_weight",
    0.0,
    "Subtracts this multiple of the squared difference between each "
    "image's expected number of templates and --template_count_target "
    "from the bound.",
)
TEMPLATE_COUNT_TARGET = flags.DEFINE_float(
    "template_count_target",
    None,
    "Templates per image that --template_count_weight asks for.",
)
TOP_POSE_REFINEMENT_STEPS = flags.DEFINE_integer(
    "top_pose_refinement_steps",
    None,
    "EM steps from the top encoder's poses toward the poses that best "
    "explain the template poses (0: the encoder's poses, the paper's; 3 "
    "puts the class in the top poses, see docs/guides/generative-capsules.md).",
)
TOP_PRESENCE_REFINEMENT_STEPS = flags.DEFINE_integer(
    "top_presence_refinement_steps",
    0,
    "Mean-field steps that compute the top presences from what each parent"
    " explains (after the pose steps).",
)
BINARY_TOP_PRESENCE_DRAWS = flags.DEFINE_integer(
    "binary_top_presence_draws",
    0,
    "Train on the bound with Bernoulli (unrelaxed) top presences, its "
    "expectation over them from this many draws per image (0: the "
    "paper's relaxed bound).",
)
TOP_POSTERIOR_FAMILY = flags.DEFINE_enum(
    "top_posterior_family",
    "mean_field",
    ["mean_field", "single_parent"],
    "`mean_field`: the paper's independent top capsules; `single_parent`: "
    "exactly one top capsule present, which one and its pose computed "
    "(exact within the family; poses by --top_pose_refinement_steps).",
)
SINGLE_PARENT_BALANCE_TEMPERATURE = flags.DEFINE_float(
    "single_parent_balance_temperature",
    0.0,
    "With --top_posterior_family=single_parent, training balances each "
    "batch's single parents across the parents at this temperature "
    "(nats; 0: the exact posterior).",
)
MIN_POSE_SCALE = flags.DEFINE_float(
    "min_pose_scale", 0.1, "Lower bound of the stds c_ij (paper: 0.1)."
)
INITIAL_POSE_SCALE = flags.DEFINE_float(
    "initial_pose_scale",
    None,
    "Initial std c_ij of predicted template poses (default 1.5 x "
    "--min_pose_scale; 0.7931: softplus 0 at the default minimum).",
)
ZERO_POSE_OFFSETS = flags.DEFINE_boolean(
    "zero_pose_offsets", False, "Start every template offset M_ij at 0."
)
TEMPLATE_CHANNELS = flags.DEFINE_integer(
    "template_channels", 32, "Channels of the template encoder's CNN."
)
NUM_TOP_CAPSULES = flags.DEFINE_integer(
    "num_top_capsules", 16, "Top-layer (object) capsules, n0 (the paper's 16)."
)
NUM_TEMPLATE_CAPSULES = flags.DEFINE_integer(
    "num_template_capsules",
    16,
    "Template (part) capsules, n1 (the paper's 16).",
)
TEMPLATE_SIZE = flags.DEFINE_integer(
    "template_size", 12, "Side of the square templates (the paper's 12)."
)
OFF_POSE_SCALE = flags.DEFINE_float(
    "off_pose_scale",
    1.0,
    "Pose std lambda_off of absent capsules (eq. 6; the paper does not"
    " give it).",
)
TEMPERATURE = flags.DEFINE_float(
    "temperature", 1.0, "Concrete temperature of the relaxed presences."
)
TOP_PRESENCE_PROBABILITY = flags.DEFINE_float(
    "top_presence_probability",
    None,
    "Fixed prior probability p that a top-layer object is present (eq. 1);"
    " unset learns it.",
)


def build_model(image_shape):
    """The generative capsule autoencoder the flags describe, compiled
    with Adam at `--learning_rate` (call in the strategy's scope)."""
    model = models.generative_capsule_autoencoder(
        image_shape=image_shape,
        num_top_capsules=NUM_TOP_CAPSULES.value,
        num_template_capsules=NUM_TEMPLATE_CAPSULES.value,
        pose_posterior=POSE_POSTERIOR.value,
        template_channels=TEMPLATE_CHANNELS.value,
        template_size=TEMPLATE_SIZE.value,
        coordinate_channels=COORDINATE_CHANNELS.value,
        normalize_top_encoder_inputs=NORMALIZE_TOP_INPUTS.value,
        presence_information_weight=PRESENCE_INFORMATION_WEIGHT.value,
        selection_information_weight=SELECTION_INFORMATION_WEIGHT.value,
        template_presence_information_weight=(
            TEMPLATE_PRESENCE_INFORMATION_WEIGHT.value
        ),
        template_count_weight=TEMPLATE_COUNT_WEIGHT.value,
        template_count_target=TEMPLATE_COUNT_TARGET.value,
        top_pose_refinement_steps=TOP_POSE_REFINEMENT_STEPS.value,
        top_presence_refinement_steps=TOP_PRESENCE_REFINEMENT_STEPS.value,
        binary_top_presence_draws=BINARY_TOP_PRESENCE_DRAWS.value,
        top_posterior_family=TOP_POSTERIOR_FAMILY.value,
        single_parent_balance_temperature=(
            SINGLE_PARENT_BALANCE_TEMPERATURE.value
        ),
        min_pose_scale=MIN_POSE_SCALE.value,
        initial_pose_scale=INITIAL_POSE_SCALE.value,
        top_kl_warmup_steps=TOP_KL_WARMUP_STEPS.value,
        stop_gradient_between_layers=STOP_GRADIENT.value,
        off_pose_scale=OFF_POSE_SCALE.value,
        temperature=TEMPERATURE.value,
        top_presence_probability=TOP_PRESENCE_PROBABILITY.value,
        seed=runs.SEED.value,
    )
    if ZERO_POSE_OFFSETS.value:
        offsets = model.decoder.pose_offsets
        offsets.assign(np.zeros(offsets.shape, offsets.dtype))
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE.value),
        jit_compile=runs.use_xla(),
    )
    return model


def apply_inference_flags(model):
    """Sets on a saved `model`, loaded for evaluation, the ways of
    computing its top layer that the command line gives
    (`--top_pose_refinement_steps`, `--top_presence_refinement_steps`),
    so that a model can be evaluated with its top poses or presences
    computed otherwise than in its training; returns `{flag: value}` of
    those set. Flags left at their defaults keep the saved model's."""
    given = {}
    for flag in (TOP_POSE_REFINEMENT_STEPS, TOP_PRESENCE_REFINEMENT_STEPS):
        if not flags.FLAGS[flag.name].using_default_value:
            setattr(model, flag.name, int(flag.value))
            given[flag.name] = int(flag.value)
    return given


def training_images(images):
    """`images` as shuffled batches of `--batch_size` as a function of
    the epoch (for `runs.fit`; the last partial batch dropped: one batch
    shape, one XLA compilation), each image shifted by up to
    `--max_shift` pixels; order and shifts are drawn from `--seed` and
    the epoch's number (`datasets.epoch_order`)."""
    seed = runs.SEED.value
    shuffled = epoch_order.epoch_batches(
        (images,), _BATCH_SIZE.value, seed, drop_remainder=True
    )
    canvas = images.shape[1]

    def of_epoch(epoch):
        def prepare(index, batch):
            (batch,) = batch
            if not MAX_SHIFT.value:
                return batch
            return image_transforms.random_translate(
                batch,
                canvas,
                MAX_SHIFT.value,
                epoch_order.batch_seed(seed, epoch, index),
            )

        data = shuffled(epoch).map(prepare, tf.data.AUTOTUNE)
        return data.prefetch(tf.data.AUTOTUNE)

    return of_epoch


def test_images(images, batch_size=500):
    """`images` in batches of `batch_size`, for evaluation. (The
    information measures are per batch, and each batch draws from the
    model's seed generator: the batch size changes both.)"""
    return tf.data.Dataset.from_tensor_slices(images).batch(batch_size)


def in_batches(function, images, batch_size=500):
    """`function` of `images`, computed 500 at a time, as NumPy arrays
    (any nest of them)."""
    outputs = [
        function(images[start : start + batch_size])
        for start in range(0, len(images), batch_size)
    ]
    return tf.nest.map_structure(
        lambda *parts: np.concatenate([np.asarray(p) for p in parts]),
        *outputs,
    )


def top_features(model, images):
    """The probes' features of `images`: `models.top_layer_features` of
    their amortised latents (`t0`, `t0_A0`)."""
    return models.top_layer_features(in_batches(model.encode, images))


def presence_report(
    train_logits, train_labels, test_logits, test_labels, **probe_options
):
    """What `(n, capsules)` presence logits say about the images: their
    presence information on the test images, nats per image
    (`distributions.layer_information` without poses), and the accuracy
    of a linear probe learned from the training images
    (`trainers.linear_probe_accuracy` with `probe_options`)."""
    information = distributions.layer_information(
        test_logits, np.zeros((*test_logits.shape, 1), np.float32)
    )["presence_information"]
    probe = trainers.linear_probe_accuracy(
        train_logits,
        train_labels,
        {"test": (test_logits, test_labels)},
        **probe_options,
    )["test"]
    return float(information), probe
