"""Mixup (Zhang et al. 2017): train on convex combinations of pairs of
examples and of their labels."""

import keras
import tensorflow as tf
from keras import ops

from keras_capsules.recipes import gradient_step


def mixup(inputs, labels, alpha, seed=None):
    """Mixes each example of a batch with another one of the same batch.

    Example k becomes `lam_k x_k + (1 - lam_k) x_p(k)`, and its label
    `lam_k y_k + (1 - lam_k) y_p(k)`, with `lam_k ~ Beta(alpha, alpha)` per
    example and `p` a random permutation of the batch.

    Args:
        inputs: a float tensor `(batch, ...)`, or a nested structure
            (list, dict) of them, all mixed with the same `lam` and `p`.
        labels: float `(batch, num_classes)` (one-hot or soft).
        alpha: float > 0, the Beta distribution's parameters.
        seed: optional int or `keras.random.SeedGenerator`.

    Returns:
        `(mixed_inputs, mixed_labels)`, of the same structure and shapes.

    Examples:

        >>> images, labels = mixup(np.ones((4, 8, 8, 1)), np.eye(4), alpha=0.2,
        ...                        seed=0)
        >>> tuple(images.shape), np.allclose(ops.sum(labels, axis=-1), 1.0)
        ((4, 8, 8, 1), True)
    """
    if alpha <= 0:
        raise ValueError(
            f"`mixup` expects `alpha` > 0. Received: alpha={alpha!r}. Skip "
            "the call to train without mixup."
        )
    labels = ops.convert_to_tensor(labels)
    batch = ops.shape(labels)[0]
    lam = keras.random.beta((batch,), alpha, alpha, seed=seed)
    partner = keras.random.shuffle(ops.arange(batch), seed=seed)

    def mix(x):
        x = ops.convert_to_tensor(x)
        weight = ops.cast(
            ops.reshape(lam, (-1,) + (1,) * (len(x.shape) - 1)), x.dtype
        )
        return weight * x + (1 - weight) * ops.take(x, partner, axis=0)

    return tf.nest.map_structure(mix, inputs), mix(labels)


@keras.saving.register_keras_serializable(package="keras_capsules")
class MixupClassifier(keras.Model):
    """A classifier trained with mixup in a feature space.

    `embedder` (optional) maps the raw inputs to float features, which are
    mixed while training, and `classifier` maps features to outputs. With
    no embedder the raw inputs are mixed (images, as in Heinsen's smallNORB
    model); with an `Embedding` as embedder, token sequences are mixed
    after their lookup (trainable embeddings in place of the frozen
    transformer features that Heinsen mixes). Labels must be one-hot (or
    soft) so that they can be mixed. Evaluation and prediction mix nothing.

    Args:
        classifier: a Keras model from features to outputs.
        embedder: optional Keras model from raw inputs to features.
        alpha: float, mixup's Beta(alpha, alpha); 0 turns mixup off.
            Defaults to 0.2.
        seed: optional int seed of the mixing.
        **kwargs: base model arguments (`name`).

    Examples:

        >>> inputs = keras.Input((4,))
        >>> classifier = keras.Model(
        ...     inputs, keras.layers.Dense(3, activation="softmax")(inputs))
        >>> model = MixupClassifier(classifier, alpha=0.2, seed=0)
        >>> model.compile("adam", "categorical_crossentropy")
        >>> history = model.fit(np.ones((8, 4)), np.eye(3)[np.arange(8) % 3],
        ...                     verbose=0)
        >>> tuple(model.predict(np.ones((2, 4)), verbose=0).shape)
        (2, 3)
    """

    def __init__(
        self, classifier, embedder=None, alpha=0.2, seed=None, **kwargs
    ):
        super().__init__(**kwargs)
        if alpha < 0:
            raise ValueError(
                "`MixupClassifier` expects `alpha` >= 0 (0 turns mixup "
                f"off). Received: alpha={alpha!r}."
            )
        self.classifier = classifier
        self.embedder = embedder
        self.alpha = float(alpha)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        # Functional parts are built when made; so is the whole then.
        self.built = classifier.built and (embedder is None or embedder.built)

    def embed(self, inputs, training=None):
        """The features that mixup mixes."""
        if self.embedder is None:
            return inputs
        return self.embedder(inputs, training=training)

    def call(self, inputs, training=None):
        return self.classifier(
            self.embed(inputs, training=training), training=training
        )

    def train_step(self, data):
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(
            data
        )
        with tf.GradientTape() as tape:
            features = self.embed(inputs, training=True)
            if self.alpha > 0:
                features, labels = mixup(
                    features, labels, self.alpha, seed=self.seed_generator
                )
            predictions = self.classifier(features, training=True)
            loss = self.compute_loss(
                inputs, labels, predictions, sample_weight, training=True
            )
        gradient_step.minimize(self, tape, loss)
        gradient_step.update_loss_metric(self, loss, tf.shape(labels)[0])
        return self.compute_metrics(inputs, labels, predictions, sample_weight)

    def get_config(self):
        return {
            "name": self.name,
            "classifier": keras.saving.serialize_keras_object(self.classifier),
            "embedder": (
                None
                if self.embedder is None
                else keras.saving.serialize_keras_object(self.embedder)
            ),
            "alpha": self.alpha,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("classifier", "embedder"):
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(
                    config[key], custom_objects=custom_objects
                )
        return cls(**config)
