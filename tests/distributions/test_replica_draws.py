"""Draws of a replica's share of a batch (`CapsulePosterior.sample` with
`rows`): replicas together draw what one process draws for the whole
batch, so a multi-worker run of the generative model is the one-process
run (issue 17)."""

import numpy as np
import tensorflow as tf

from keras_capsules import distributions
from tests.fresh_process import TWO_CPU_DEVICES, run_python


def posterior(batch, temperature=0.5, seed=0):
    rng = np.random.default_rng(seed)
    return distributions.CapsulePosterior(
        presence_logits=tf.constant(rng.normal(size=(batch, 3)), tf.float32),
        pose_means=tf.constant(rng.normal(size=(batch, 3, 6)), tf.float32),
        pose_scales=tf.constant(rng.uniform(0.1, 1, (batch, 3, 6)), tf.float32),
        temperature=temperature,
    )


def rows_of(posterior, start, stop):
    return distributions.CapsulePosterior(
        posterior.presence_logits[start:stop],
        posterior.pose_means[start:stop],
        None
        if posterior.pose_scales is None
        else posterior.pose_scales[start:stop],
        posterior.temperature,
    )


class ShareOfBatchTest(tf.test.TestCase):
    def test_shares_draw_the_rows_of_the_whole_batch(self):
        seed = tf.constant([4, 7])
        for temperature in (0.5, None):
            whole = posterior(6, temperature)
            expected = whole.sample(seed)
            for start, stop in ((0, 2), (2, 5), (5, 6)):
                share = rows_of(whole, start, stop).sample(seed, (start, 6))
                for key, value in share.items():
                    self.assertAllClose(value, expected[key][start:stop])

    def test_a_share_without_rows_draws_other_noise(self):
        seed = tf.constant([4, 7])
        whole = posterior(6)
        alone = rows_of(whole, 2, 4).sample(seed)
        self.assertNotAllClose(alone["pose"], whole.sample(seed)["pose"][2:4])

    def test_gradients_reach_the_share_only(self):
        whole = posterior(4)
        share = rows_of(whole, 1, 3)
        with tf.GradientTape() as tape:
            tape.watch(share.pose_means)
            total = tf.reduce_sum(
                share.sample(tf.constant([1, 2]), (1, 4))["pose"]
            )
        gradient = tape.gradient(total, share.pose_means)
        self.assertAllClose(gradient, tf.ones_like(gradient))

    def test_replicas_draw_the_one_process_noise(self):
        # Two logical CPUs: configured before TensorFlow starts, so in a
        # process of its own. Batches of 6 and of 5 (split unevenly).
        result = run_python(
            TWO_CPU_DEVICES,
            """
            import numpy as np
            from keras_capsules import distributions
            from keras_capsules.recipes import gradient_step
            from tests.distributions.test_replica_draws import posterior

            def draw(logits, means, scales):
                rows = gradient_step.replica_rows(tf.shape(logits)[0])
                share = distributions.CapsulePosterior(
                    logits, means, scales, 0.5)
                return share.sample(tf.constant([3, 9]), rows)["pose"]

            strategy = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
            for batch in (6, 5):
                whole = posterior(batch)
                parts = (whole.presence_logits, whole.pose_means,
                         whole.pose_scales)
                data = tf.data.Dataset.from_tensors(parts)
                inputs = next(iter(strategy.experimental_distribute_dataset(
                    data)))
                shares = strategy.run(tf.function(draw), args=inputs)
                local = strategy.experimental_local_results(shares)
                print("sizes", [int(share.shape[0]) for share in local])
                np.testing.assert_allclose(
                    np.concatenate(local),
                    draw(*parts).numpy(),  # one replica: the whole batch
                    rtol=1e-6)
            print("equal")
            """,
        )
        self.assertIn("equal", result.stdout, result.stderr[-3000:])
        self.assertIn("sizes [3, 2]", result.stdout)


if __name__ == "__main__":
    tf.test.main()
