"""Uniform routing: no routing at all, the baseline every routing
comparison needs (Paik, Kwak, Kim 2019; Gu, Tresp 2020)."""

from keras_capsules.ops.dynamic_routing import dynamic_routing


def uniform_routing(votes, mask=None):
    """Sends every vote to every output capsule with the same weight.

    ```none
    paper        code            shape
    u_hat[j|i]   votes           (batch, n_in, n_out, d_out)
    c[i, j]      -               1 / n_out for every pair
    s[j]         -               sum_i c[i, j] u_hat[j|i]
    v[j]         capsules        squash(s[j])  (Sabour et al. eq. 1)
    ```

    Paik et al. found dynamic and EM routing "often worse than uniform or
    random" coupling; this is their uniform coupling, which is also the
    first iteration of Procedure 1, so it is `dynamic_routing(votes,
    num_iterations=1)`. A masked input capsule (`mask[b, i]` False) has
    coupling 0, so it changes no output.

    Args:
        votes: float `(batch, n_in, n_out, d_out)` (float16 and bfloat16
            route in float32; integers in `keras.config.floatx()`).
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(batch, n_out, d_out)` output capsules, each of length < 1, in the
        votes' dtype.

    Examples:

        >>> votes = np.ones((1, 4, 2, 3))
        >>> capsules = uniform_routing(votes)  # s = 4 * (1, 1, 1) / 2
        >>> np.round(ops.convert_to_numpy(capsules[0, 0]), 4)
        array([0.5329, 0.5329, 0.5329])
    """
    return dynamic_routing(votes, num_iterations=1, mask=mask)
