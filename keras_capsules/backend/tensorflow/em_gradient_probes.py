"""Probes through which EM routing's iterations pass their votes'
gradient as factors, so that the votes' gradient is formed once
(`weighted_moments` with a `gradient_probe`)."""

import tensorflow as tf  # the custom gradient


def gradient_probes(votes, count):
    """`count` probes, one per `weighted_moments` call on `votes`, through
    which each call passes its votes' gradient as factors; the votes'
    gradient is then formed from all of them in one pass over the votes.

    Each call's gradient (`_backward`, with its `G`, `g_mu'` and `r = 1 /
    sigma^2`) is

    ```none
    g_V_ih = (V_ih - mu_h) (s_i 2 G_h + g_dist_i 2 r_h) + s_i g_mu'_h
    ```

    built from factors over the children, `[s, g_dist]` `(I, 2)`, and
    over the entries, `[2 G; 2 r; g_mu'; mu]` `(4, h)`. Summed over the
    calls it is elementwise work on the votes and the factors, which XLA
    fuses into one pass; automatic differentiation wrote a vote-sized
    gradient for every call, added them and wrote the sum again. Each
    probe is a pair of zeros of the factors' shapes, `(batch, P, J, I,
    2)` and `(batch, P, J, 4, h)`; their gradients are the factors.

    `g_mu'` needs `sum_i g_dist_i (V_i - mu)`, formed as `sum_i g_dist_i
    V_i - mu sum_i g_dist_i`: one product over the votes, with no `V - mu`
    written out. That form cancels where the votes sit far from 0 against
    their spread, so the votes should be centred, as
    `em_routing_on_patches` centres them on each parent's
    activation-weighted mean vote (votes at 1 with spread 1e-3 lost 9e-5
    of the gradient's largest entry in float32, where automatic
    differentiation lost 5e-5; centred on 0, 7e-8 and 1.2e-7).

    Args:
        votes: `(batch, P, J, I, h)`, centred.
        count: the number of `weighted_moments` calls.

    Returns:
        A list of `count` probes, each a `(left, right)` pair.
    """
    votes = tf.convert_to_tensor(votes)

    @tf.custom_gradient
    def attach(votes):
        shape = tf.shape(votes)
        pair = (
            tf.zeros(tf.concat([shape[:-1], [2]], 0), votes.dtype),
            tf.zeros(tf.concat([shape[:-2], [4], shape[-1:]], 0), votes.dtype),
        )

        def gradient(*d_probes):
            d_votes = tf.zeros_like(votes)
            for left, right in zip(d_probes[::2], d_probes[1::2]):
                if left is None or right is None:  # a probe left unused
                    continue
                shares, d_distances = left[..., 0, None], left[..., 1, None]
                d_variances, inverse, d_means, means = (
                    right[..., k, None, :] for k in range(4)
                )
                d_votes = d_votes + (
                    (votes - means)
                    * (shares * d_variances + d_distances * inverse)
                    + shares * d_means
                )
            return d_votes

        return list(pair) * count, gradient

    probes = attach(votes)
    return list(zip(probes[::2], probes[1::2]))
