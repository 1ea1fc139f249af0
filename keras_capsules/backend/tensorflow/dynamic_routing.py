"""TensorFlow's gradient of routing by agreement (`ops.dynamic_routing`):
the votes' gradient formed in one pass."""

import tensorflow as tf  # the custom gradient; the tape differentiates squash
from keras import ops

from keras_capsules.backend.tensorflow.compilation import compiled_by_xla
from keras_capsules.ops.dynamic_routing import routing_iterations
from keras_capsules.ops.squash import squash


def routed_capsules(votes, weight, num_iterations):
    """The last iteration's capsules of `ops.dynamic_routing`'s Procedure 1
    on `(b, j, i, h)` votes, with a gradient that reads the votes
    `2 (r - 1)` times and writes theirs once.

    The votes enter the routing only through two products, `s_t = c_t V`
    (eq. 2) and the agreement `a_t = V v_t`; everything else acts on
    tensors without the input-and-output pair of axes. So the votes'
    gradient is a sum of `2 r - 1` outer products, `sum_t c_t (x) ds_t +
    sum_t da_t (x) v_t`, formed here in one pass (by one batched product,
    or under XLA by one fused sum), where automatic differentiation would
    write each of them out and add them (and keep every product's inputs
    alive).
    """

    @tf.custom_gradient
    def route(votes):
        steps = routing_iterations(votes, weight, num_iterations)
        couplings, softmaxes = steps["couplings"], steps["softmaxes"]
        totals, capsules = steps["totals"], steps["capsules"]

        def gradient(upstream):
            # Reverse the iterations: d_capsule is the gradient reaching
            # v_t, d_logits the sum of those reaching the logits after
            # a_t, which is a_t's own.
            d_capsule, d_logits = upstream, None
            d_totals, d_agreements = [], []
            for iteration in reversed(range(num_iterations)):
                with tf.GradientTape() as tape:
                    tape.watch(totals[iteration])
                    capsule = squash(totals[iteration])
                d_total = tape.gradient(
                    capsule, totals[iteration], output_gradients=d_capsule
                )
                d_totals.append(d_total)
                if iteration == 0:
                    break
                d_coupling = ops.matmul(votes, d_total[..., None])[..., 0]
                if weight is not None:
                    d_coupling = d_coupling * weight
                softmax = softmaxes[iteration]
                d_softmax = softmax * (
                    d_coupling
                    - ops.sum(softmax * d_coupling, axis=1, keepdims=True)
                )
                d_logits = (
                    d_softmax if d_logits is None else d_logits + d_softmax
                )
                d_agreements.append(d_logits)
                d_capsule = ops.matmul(d_logits[:, :, None, :], votes)[
                    :, :, 0, :
                ]
            d_totals.reverse()
            d_agreements.reverse()
            lefts = couplings + d_agreements  # (b, j, i) each
            rights = d_totals + capsules[:-1]  # (b, j, h) each
            if compiled_by_xla():  # Fused into one pass.
                return sum(
                    left[..., None] * right[:, :, None, :]
                    for left, right in zip(lefts, rights)
                )
            # (b, j, i, 2r - 1) @ (b, j, 2r - 1, h): every outer product
            # at once.
            return ops.matmul(
                ops.stack(lefts, axis=-1), ops.stack(rights, axis=-2)
            )

        return capsules[-1], gradient

    return route(votes)
