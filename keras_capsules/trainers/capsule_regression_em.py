"""EM training of capsule regression (Saul, sections 2.3, 2.4 and 3.1).

```none
paper                      code
W_i (d x p)                kernel[k, :, i, :]  (q, d), q = p (+1 with offset)
x_l                        design rows z_l = [x_l - mean, 1]
sum_l x_l x_l^T            gram      (K, q, q), inverted once (eq. 22)
E[h_i | x_l, y_l]          scale * W_i x_l  (eq. 19)
r_l                        max_(y != y_l) P(y | x_l) / P(y_l | x_l)  (eq. 25)
nu                         threshold: r_l <= nu uses the prior mean (eq. 26)
gamma                      momentum (eq. 27)
```

M-step (eq. 22): `W_i <- (sum_l E[h_i|x_l, y_l] x_l^T)(sum_l x_l x_l^T)^-1`.
Protocol (3.1): five rounds with nu = 0.8, 0.6, 0.4, 0.2, 0, each ending when
validation error has not improved for 128, 64, 32, 16, 8 iterations, each
starting from the best model of the round before; gamma = 0.9.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_capsules import ops as capsule_ops
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.ops.arguments import positive_int
from keras_capsules.trainers import architectures, em_batch_sums, initialization
from keras_capsules.trainers.em_batch_sums import (
    EMBatchSums,
    check_label_count,
)
from keras_capsules.trainers.em_schedule import EMSchedule
from keras_capsules.trainers.em_state import PROGRESS_KEYS, EMState
from keras_capsules.trainers.statistics import DatasetSum


class CapsuleRegressionEM:
    """Trains capsule regression by EM with thresholding and momentum.

    Args:
        num_classes: int, classes `C` (>= 2).
        capsule_dim: int, capsule size `d`.
        architecture: `"multiclass"`, `"one_vs_all"` or `"all_vs_all"`.
        schedule: an `EMSchedule`, a dict of its fields or the name of
            one of its presets (`"paper"`): the rounds' thresholds and
            patience, the momentum and an optional cap on the iterations.
            None: the paper's protocol.
        use_offset: bool, whether the models have an offset.
        center_inputs: bool, whether inputs are centred on the training mean.
        initializer: `"subspace"` (eq. 28) or `"random"`.
        seed: int, seed of the random initialisation.

    Examples:

        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 3, 300)
        >>> features = rng.normal(size=(3, 4))[labels] + rng.normal(
        ...     0.0, 0.3, (300, 4))
        >>> train = tf.data.Dataset.from_tensor_slices(
        ...     (features.astype("float32"), labels)).batch(100)
        >>> trainer = CapsuleRegressionEM(3, 2, schedule={"max_iterations": 5})
        >>> history = trainer.fit(train, verbose=0)
        >>> trainer.evaluate(train) < 0.1
        True
        >>> layer = trainer.to_layer()  # multiclass: a CapsuleRegression layer
    """

    def __init__(
        self,
        num_classes,
        capsule_dim,
        architecture="multiclass",
        schedule=None,
        use_offset=False,
        center_inputs=False,
        initializer="subspace",
        seed=0,
    ):
        architectures.check_architecture(architecture)
        num_classes = positive_int(
            "CapsuleRegressionEM", "num_classes", num_classes
        )
        capsule_dim = positive_int(
            "CapsuleRegressionEM", "capsule_dim", capsule_dim
        )
        if num_classes < 2:
            raise ValueError(
                f"Capsule regression needs num_classes >= 2. "
                f"Received: num_classes={num_classes}."
            )
        if initializer not in ("subspace", "random"):
            raise ValueError(
                f"Unknown initializer: {initializer!r}. Expected 'subspace' "
                "or 'random'."
            )
        self.num_classes = num_classes
        self.capsule_dim = capsule_dim
        self.architecture = architecture
        self.schedule = EMSchedule.get(schedule)
        self.use_offset = bool(use_offset)
        self.center_inputs = bool(center_inputs)
        self.initializer = initializer
        self.seed = seed
        self.membership = architectures.membership(architecture, num_classes)
        self.kernel = None  # (K, q, m, d) once fitted.
        self.input_mean = None
        self._inverse_gram = None
        sums = EMBatchSums(
            num_classes, architecture, self.membership, self.use_offset
        )
        self._design = sums.design
        self._class_moment_sum = DatasetSum(sums.class_moments)
        self._estep_sum = DatasetSum(sums.estep)
        self._error_sum = DatasetSum(sums.errors)

    @property
    def num_models(self):
        return self.membership.shape[0]

    def _errors(self, dataset, kernel):
        return em_batch_sums.error_rates(
            self._error_sum, dataset, kernel, self.input_mean, self.num_classes
        )

    # Training.
    def prepare(self, train_dataset):
        """Computes the input statistics and returns the initial kernel.

        One pass over the data: per-class counts, sums and Gram matrices give
        the input mean, the inverse of eq. 22's `sum_l x_l x_l^T` for every
        model, and the initialisation of eq. 28.

        Returns:
            The initial kernel `(K, q, m, d)`, q = p (+1 with an offset).
        """
        counts, sums, grams, bad_labels = self._class_moment_sum(train_dataset)
        check_label_count(bad_labels, self.num_classes)
        self.input_mean, self._inverse_gram, kernel = (
            initialization.initial_state(
                (counts, sums, grams),
                self.membership,
                self.capsule_dim,
                self.use_offset,
                self.center_inputs,
                (self.initializer, self.seed),
            )
        )
        return kernel

    def em_update(self, train_dataset, kernel, thresholds):
        """One thresholded EM update (eqs. 22 and 26), without momentum.

        Args:
            train_dataset: the dataset `prepare` saw.
            kernel: `(K, q, m, d)` current kernels.
            thresholds: `(K,)` nu per model; 0 gives plain EM (eq. 24).

        Returns:
            `(updated_kernel, (log_likelihood, wrong, seen))`: the new
            kernels, and per model the log-likelihood (eq. 6), the number of
            misclassified and of seen examples, all for the current kernel.
        """
        if self._inverse_gram is None:
            raise ValueError(
                "Call `prepare(train_dataset)` before `em_update`."
            )
        return em_batch_sums.em_step(
            self._estep_sum,
            train_dataset,
            kernel,
            self.input_mean,
            self._inverse_gram,
            np.broadcast_to(thresholds, (self.num_models,)),
        )

    def fit(
        self,
        train_dataset,
        validation_dataset=None,
        verbose=1,
        checkpoint_path=None,
        checkpoint_every=10,
    ):
        """Runs the rounds of thresholded EM with momentum.

        Args:
            train_dataset: `tf.data.Dataset` of `(features, labels)` batches,
                features `(batch, p)`, labels `(batch,)` ints in `[0, C)`.
            validation_dataset: like `train_dataset`; its error ends rounds
                and picks the best model. Without it, training error does.
            verbose: 0 silent, 1 a Keras progress bar.
            checkpoint_path: optional `.npz` path. The training state is
                written there every `checkpoint_every` iterations and at
                the end; if the file exists, training resumes from it.
            checkpoint_every: int, iterations between checkpoints.

        Returns:
            A dict of per-iteration lists: `log_likelihood` (eq. 6, summed
            over models) and `error` on the training data (for ensembles,
            the mean error of the binary models), `validation_error` (of the
            whole architecture), `round` (the lowest round of any model) and
            `active_models`. Iteration t reports the models before their
            t-th update.
        """
        state = EMState.start_or_resume(
            self.prepare(train_dataset), checkpoint_path
        )
        progress = keras.utils.Progbar(
            self.schedule.max_iterations,
            verbose=verbose,
            unit_name="iteration",
            stateful_metrics=list(PROGRESS_KEYS),
        )
        while not state.finished(self.schedule):
            self._iterate(state, train_dataset, validation_dataset)
            if checkpoint_path and state.iteration % checkpoint_every == 0:
                state.save(checkpoint_path)
            progress.update(state.iteration, state.progress(), finalize=False)
        progress.update(state.iteration, finalize=True)
        if checkpoint_path:
            state.save(checkpoint_path)
        self.kernel = state.best_kernel
        self.history = state.history
        return state.history

    def _iterate(self, state, train_dataset, validation_dataset):
        """One iteration: E-step, validation, M-step, then the state's
        momentum and rounds (`EMState.advance`)."""
        active = state.rounds < self.schedule.num_rounds
        updated, (log_likelihood, wrong, seen) = self.em_update(
            train_dataset,
            state.kernel,
            self.schedule.thresholds_at(state.rounds),
        )
        train_error = wrong / np.maximum(seen, 1.0)
        if validation_dataset is not None:
            model_error, combined_error = self._errors(
                validation_dataset, state.kernel
            )
        else:
            model_error, combined_error = train_error, float("nan")
        state.record(
            log_likelihood=float(log_likelihood.sum()),
            error=float(np.mean(train_error)),
            validation_error=combined_error,
            round=int(state.rounds.min()),
            active_models=int(active.sum()),
        )
        state.advance(updated, model_error, self.schedule)

    # Using the trained models.
    def _check_fitted(self):
        if self.kernel is None:
            raise ValueError("The trainer has no models yet: call `fit` first.")

    def predict_probabilities(self, features):
        """Returns every model's `P(y | x)`, `(batch, K, m)`."""
        self._check_fitted()
        means = tf.einsum(
            "bq,kqmd->bkmd",
            self._design(features, self.input_mean),
            tf.constant(self.kernel, tf.float32),
        )
        return capsule_ops.capsule_regression_probabilities(means)

    def predict(self, features):
        """Returns the predicted classes `(batch,)` of the architecture."""
        return ops.convert_to_numpy(
            architectures.predict_classes(
                self.architecture,
                self.membership,
                self.predict_probabilities(features),
            )
        )

    def evaluate(self, dataset):
        """Returns the architecture's classification error on a dataset."""
        self._check_fitted()
        return self._errors(dataset, self.kernel)[1]

    def binary_layers(self):
        """Returns the K trained models as `CapsuleRegression` layers."""
        self._check_fitted()
        input_mean = self.input_mean if self.center_inputs else None
        return [
            CapsuleRegression.from_kernel(kernel, input_mean, self.use_offset)
            for kernel in self.kernel
        ]

    def to_layer(self):
        """Returns the trained multiclass model as a `CapsuleRegression`."""
        if self.architecture != "multiclass":
            raise ValueError(
                "`to_layer` returns the multiclass model; a "
                f"{self.architecture!r} trainer has {self.num_models} binary "
                "models: use `binary_layers()`."
            )
        return self.binary_layers()[0]
