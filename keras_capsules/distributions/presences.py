"""Presence variables: Bernoulli and their Concrete relaxation.

The paper relaxes every presence `t ~ Bern(gamma)` to a Concrete
(relaxed Bernoulli) variable with temperature `T` (Maddison et al., 2017;
temperature 1.0 in the paper). We represent a relaxed presence by its
logit `y`, with `t = sigmoid(y)`:

```none
y = (logit(gamma) + L) / T,    L ~ Logistic(0, 1)
  ~ Logistic(loc=logit(gamma) / T, scale=1 / T)
```

Densities of `y` and of `t` differ by the Jacobian of the sigmoid, which
is the same for every distribution over the same `t` and so cancels from
every ratio in the bound (and from mixtures over parents). Working with
`y` keeps `log_prob` finite where `t` rounds to 0 or 1 in float32.
"""

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

tfd = tfp.distributions

# log(0) as a finite number: a quarter of the float32 range, so sums of a
# few such terms stay finite.
LOG_ZERO = -0.25 * np.finfo(np.float32).max

# Uniform draws are kept this far from 0 and 1 so the Logistic noise
# log(u) - log(1 - u) is finite (|L| <= 16.6 in float32).
_UNIFORM_MARGIN = 1e-7


def presence_key(temperature):
    """The event key of presences: `presence` or, relaxed, `presence_logit`."""
    return "presence" if temperature is None else "presence_logit"


class KeyedByTemperature:
    """A mixin for objects with a `temperature` (None: binary presences):
    the event key of their presences, `presence_key`."""

    @property
    def presence_key(self):
        return presence_key(self.temperature)


def relaxed_presence(probability_logits, temperature):
    """The Concrete relaxation of `Bern(sigmoid(probability_logits))`.

    Returns a `tfd.Logistic` over the relaxed presence logit `y`, with the
    batch shape of `probability_logits` and a scalar event.

    Examples:

        >>> presence = relaxed_presence(np.zeros(3, "float32"), temperature=1.0)
        >>> tuple(presence.sample(seed=(0, 1)).shape)  # relaxed logits
        (3,)
    """
    probability_logits = tf.convert_to_tensor(probability_logits)
    temperature = tf.convert_to_tensor(temperature, probability_logits.dtype)
    return tfd.Logistic(
        loc=probability_logits / temperature, scale=1.0 / temperature
    )


def presence_log_prob(value, probability_logits, temperature):
    """`log p(value)` of a presence given `logit(gamma)`, elementwise.

    `value` is a presence in {0, 1} when `temperature` is None, else a
    relaxed presence logit `y`.
    """
    if temperature is None:
        value = tf.cast(value, probability_logits.dtype)
        return value * tf.math.log_sigmoid(probability_logits) + (
            1.0 - value
        ) * tf.math.log_sigmoid(-probability_logits)
    return relaxed_presence(probability_logits, temperature).log_prob(value)


def logistic_noise(shape, seed, dtype=tf.float32):
    """Standard Logistic draws from a stateless seed, finite everywhere."""
    uniform = tf.random.stateless_uniform(
        shape,
        seed=seed,
        minval=_UNIFORM_MARGIN,
        maxval=1.0 - _UNIFORM_MARGIN,
        dtype=dtype,
    )
    return tf.math.log(uniform) - tf.math.log1p(-uniform)


def sample_presences(probability_logits, temperature, seed):
    """Draws presences (binary) or relaxed presence logits, per element.

    Relaxed draws are reparameterised: gradients reach
    `probability_logits`.
    """
    probability_logits = tf.convert_to_tensor(probability_logits)
    noise = logistic_noise(
        tf.shape(probability_logits), seed, probability_logits.dtype
    )
    if temperature is None:
        return tf.cast(noise < probability_logits, probability_logits.dtype)
    return (probability_logits + noise) / tf.convert_to_tensor(
        temperature, probability_logits.dtype
    )


def presence_values(value, temperature):
    """The presence `t` in [0, 1] of an event value (binary or logit)."""
    if temperature is None:
        return value
    return tf.math.sigmoid(value)


def log_presences(presence):
    """`log t` for `t` in [0, 1]; exactly-zero presences get a dtype-aware
    large negative (not -inf), so they drop out of a `logsumexp` that holds
    a finite term and leave finite gradients."""
    present = presence > 0
    safe = tf.where(present, presence, tf.ones_like(presence))
    return tf.where(
        present, tf.math.log(safe), tf.constant(LOG_ZERO, presence.dtype)
    )
