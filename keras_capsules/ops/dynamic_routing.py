"""Routing by agreement (Sabour, Frosst, Hinton 2017, Procedure 1)."""

from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.arguments import (
    check_num_iterations,
    check_rank,
    check_shape,
    routing_tensor,
)
from keras_capsules.ops.fast_paths import fast_path
from keras_capsules.ops.squash import squash


def dynamic_routing(votes, num_iterations=3, mask=None):
    """Routes votes to output capsules by agreement (Sabour et al., Proc. 1).

    ```none
    paper        code            shape
    u_hat[j|i]   votes           (batch, n_in, n_out, d_out)
    b[i, j]      routing_logits  (batch, n_in, n_out)
    c[i, j]      coupling        softmax of b[i, :] over j (eq. 3)
    s[j]         total_input     sum_i c[i, j] u_hat[j|i] (eq. 2)
    v[j]         capsules        squash(s[j]) (eq. 1)
    ```

    Each call starts from `b = 0` for every example (logits are never
    carried between examples or batches), and each iteration adds the
    agreement `u_hat[j|i] . v[j]` to `b[i, j]`. The last iteration's update
    is skipped, as it changes no output. A masked input capsule
    (`mask[b, i]` False) has coupling 0 to every output, so it changes no
    output capsule; if every input is masked the capsules are 0.

    Args:
        votes: float `(batch, n_in, n_out, d_out)` (float16 and bfloat16
            route in float32; integers in `keras.config.floatx()`).
        num_iterations: int >= 1, the paper's `r`. Defaults to 3.
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(batch, n_out, d_out)` output capsules `v`, each of length < 1, in
        the votes' dtype.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 32, 10, 16))
        >>> capsules = dynamic_routing(votes, num_iterations=3)
        >>> tuple(capsules.shape)
        (2, 10, 16)
        >>> bool(ops.all(ops.norm(capsules, axis=-1) < 1))
        True
    """
    votes, dtype = routing_tensor("dynamic_routing", "votes", votes)
    layout = "(batch, n_in, n_out, d_out)"
    check_rank("dynamic_routing", "votes", votes, layout)
    check_num_iterations("dynamic_routing", num_iterations)
    # Route with votes laid out (b, j, i, h): eqs. 2 and the agreement are
    # then batched matrix-vector products over contiguous memory (2-3x
    # faster under XLA than sums over the input axis of (b, i, j, h)).
    votes = ops.transpose(votes, (0, 2, 1, 3))  # (b, j, i, h)
    weight = None  # (b, 1, i): 1 for inputs that take part, else 0.
    if mask is not None:
        check_shape(
            "dynamic_routing", "mask", mask, (votes.shape[0], votes.shape[2])
        )
        weight = ops.cast(mask, votes.dtype)[:, None, :]
    return ops.cast(_route(votes, weight, num_iterations), dtype)


def _route(votes, weight, num_iterations):
    """Procedure 1 on `(b, j, i, h)` votes: the last iteration's capsules,
    differentiated automatically, or by the backend's own gradient where
    it has one (TensorFlow: `backend/tensorflow/dynamic_routing.py`)."""
    route = fast_path("routed_capsules")
    if route is not None:
        return route(votes, weight, num_iterations)
    return routing_iterations(votes, weight, num_iterations)["capsules"][-1]


def routing_iterations(votes, weight, num_iterations):
    """Procedure 1 on `(b, j, i, h)` votes, with what each iteration
    formed: `couplings` (masked, `(b, j, i)`), `softmaxes` (unmasked,
    None for the first iteration), `totals` and `capsules` (`(b, j, h)`),
    each a list with one entry per iteration.

    The votes enter only through two products, `s_t = c_t V` (eq. 2) and
    the agreement `a_t = V v_t`; a hand-written gradient needs nothing
    else.
    """
    steps = {"couplings": [], "softmaxes": [None], "totals": [], "capsules": []}
    num_outputs = votes.shape[1]
    # First iteration: b = 0, so c[i, j] = 1 / n_out for every pair.
    coupling = ops.full_like(votes[..., 0], 1.0 / num_outputs)
    routing_logits = None
    for iteration in range(num_iterations):
        if iteration > 0:
            coupling = ops.softmax(routing_logits, axis=1)  # Eq. 3.
            steps["softmaxes"].append(coupling)
        if weight is not None:
            coupling = coupling * weight
        total = dtype_keeping.matmul(coupling[:, :, None, :], votes)[:, :, 0, :]
        capsule = squash(total)  # Eq. 1, (b, j, h).
        steps["couplings"].append(coupling)
        steps["totals"].append(total)
        steps["capsules"].append(capsule)
        if iteration + 1 < num_iterations:
            agreement = dtype_keeping.matmul(votes, capsule[..., None])[..., 0]
            routing_logits = (
                agreement
                if routing_logits is None
                else routing_logits + agreement
            )  # (b, j, i)
    return steps
