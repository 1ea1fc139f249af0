"""CapsulePrior: eqs. 1-2 of Smith et al. (2020)."""

import numpy as np
import pytest

from keras_capsules.distributions import CapsulePrior
from tests.distributions import generative_reference as reference


@pytest.mark.parametrize("temperature", [None, 0.5])
def test_log_prob_matches_numpy(temperature):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 4))
    prior = CapsulePrior(logits, pose_dim=6, temperature=temperature)
    assert prior.batch_shape == (2,)
    presence = (
        rng.integers(0, 2, size=(2, 4)).astype(float)
        if temperature is None
        else rng.normal(size=(2, 4)) * 4
    )
    poses = rng.normal(size=(2, 4, 6))
    expected = np.log(reference.normal_pdf(poses, 0.0, 1.0)).sum((-2, -1))
    if temperature is None:
        p = reference.sigmoid(logits)
        expected += np.log(np.where(presence == 1, p, 1 - p)).sum(-1)
    else:
        expected += np.log(
            reference.logistic_pdf(
                presence, logits / temperature, 1 / temperature
            )
        ).sum(-1)
    value = {prior.presence_key: presence, "pose": poses}
    np.testing.assert_allclose(prior.log_prob(value), expected, rtol=1e-10)


def test_samples_agree_with_the_prior():
    logits = np.array([-2.0, 0.0, 1.5])
    prior = CapsulePrior(logits, pose_dim=6)
    draws = 20_000
    samples = prior.sample(draws, seed=(1, 2))
    frequency = samples["presence"].numpy().mean(0)
    p = reference.sigmoid(logits)
    assert np.all(np.abs(frequency - p) < 4 * np.sqrt(p * (1 - p) / draws))
    poses = samples["pose"].numpy()[:, 0, 0]  # one coordinate: i.i.d.
    assert reference.ks_statistic(poses, reference.normal_cdf) < 2.0 / np.sqrt(
        draws
    )


def test_relaxed_samples_are_concrete():
    """`sigmoid(y)` of a relaxed draw is Concrete: P(y > 0) = p."""
    logits = np.array([-1.0, 0.5])
    prior = CapsulePrior(logits, pose_dim=6, temperature=0.3)
    draws = 20_000
    y = prior.sample(draws, seed=(3, 4))["presence_logit"].numpy()
    p = reference.sigmoid(logits)
    frequency = (y > 0).mean(0)
    assert np.all(np.abs(frequency - p) < 4 * np.sqrt(p * (1 - p) / draws))
    scaled = y[:, 0] * 0.3 - logits[0]  # standard Logistic
    assert reference.ks_statistic(scaled, reference.sigmoid) < 2.0 / np.sqrt(
        draws
    )
