"""What the two Heinsen example scripts share: the paper's optimiser and
schedule, mixup, and the flags where the author's code and the paper's
text differ."""

import keras
from absl import flags

from examples import run_flags, runs
from keras_capsules import recipes

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

OPTIMIZERS = ("radam", "adam")
BETA_1_SCHEDULES = {
    "author": recipes.AUTHOR_BETA_1,
    "paper_text": recipes.PAPER_TEXT_BETA_1,
}

LEARNING_RATE = run_flags.request(__name__, "learning_rate")
# Flags both scripts take: where the author's code and the paper's text
# (or this library's first version) differ.
BETA_1_SCHEDULE = flags.DEFINE_enum(
    "beta_1_schedule",
    "author",
    list(BETA_1_SCHEDULES),
    "RAdam's beta_1 on the cycle: `author` 0.9 -> 0.81 (the code that "
    "produced the paper's numbers), `paper_text` 0.999 -> 0.8991.",
)
ROUTING_EPSILON = flags.DEFINE_float(
    "routing_epsilon", 1e-5, "Routing's stabiliser (the author's: 1e-5)."
)
MIXUP_ALPHA = flags.DEFINE_float(
    "mixup_alpha", 0.2, "Mixup's Beta(alpha, alpha) (paper 0.2); 0: off."
)


def compile_classifier(
    model,
    total_steps,
    peak_learning_rate,
    jit_compile,
    optimizer="radam",
    beta_1_schedule="author",
    start_learning_rate=1e-5,
):
    """Compiles for cross-entropy on the softmax of the output scores,
    with accuracy.

    The learning rate follows one cycle (`start_learning_rate` -> peak
    over 10% of the steps, cosine back). `optimizer="radam"` is the
    paper's: RAdam, its `beta_1` on the same cycle, 0.9 -> 0.81 -> 0.9 as
    the author's code (`beta_1_schedule="author"`) or 0.999 -> 0.8991 ->
    0.999 as the paper's text (`"paper_text"`). `"adam"`: Adam with
    Keras's constant betas.
    """
    if optimizer not in OPTIMIZERS or beta_1_schedule not in BETA_1_SCHEDULES:
        raise ValueError(
            f"`compile_classifier` expects `optimizer` in {OPTIMIZERS} and "
            f"`beta_1_schedule` in {tuple(BETA_1_SCHEDULES)}. Received: "
            f"optimizer={optimizer!r}, beta_1_schedule={beta_1_schedule!r}."
        )
    learning_rate = (start_learning_rate, peak_learning_rate)
    if optimizer == "radam":
        optimizer = recipes.one_cycle_radam(
            total_steps,
            learning_rate=learning_rate,
            beta_1=BETA_1_SCHEDULES[beta_1_schedule],
        )
    else:
        optimizer = keras.optimizers.Adam(
            recipes.OneCycle(total_steps, *learning_rate)
        )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
        jit_compile=jit_compile,
    )


def compile_for_run(model, steps_per_epoch, optimizer="radam"):
    """`compile_classifier` with the run's flags: one cycle over
    `--epochs` of `steps_per_epoch` to the peak `--learning_rate`,
    `--beta_1_schedule`, XLA by `--jit_compile`."""
    compile_classifier(
        model,
        _EPOCHS.value * steps_per_epoch,
        LEARNING_RATE.value,
        runs.use_xla(),
        optimizer=optimizer,
        beta_1_schedule=BETA_1_SCHEDULE.value,
    )
