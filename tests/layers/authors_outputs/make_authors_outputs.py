"""Makes the authors' code's outputs that tests/layers/test_authors_outputs.py
compares the library's routing layers with.

Each family's layer from the authors' repository runs on inputs and
weights drawn here from a fixed seed; inputs, weights and outputs go to
`<family>.npz` beside this file. Nothing of the authors' code is kept in
the project: pass a checkout of their repository.

Usage (each in an environment with the authors' framework):

    python tests/layers/authors_outputs/make_authors_outputs.py \
        --family=self_attention --authors_code=PATH/Efficient-CapsNet
    python tests/layers/authors_outputs/make_authors_outputs.py \
        --family=inverted_attention \
        --authors_code=PATH/ml-capsules-inverted-attention-routing
    python tests/layers/authors_outputs/make_authors_outputs.py \
        --family=variational_bayes \
        --authors_code=PATH/Variational-Capsule-Routing
    python tests/layers/authors_outputs/make_authors_outputs.py \
        --family=self_routing --authors_code=PATH/SR-CapsNet

The repositories and commits used: EscVM/Efficient-CapsNet 4b337f5
(TensorFlow 2.21), apple/ml-capsules-inverted-attention-routing 53899ae,
fabio-deep/Variational-Capsule-Routing 78fb69d, coder3000/SR-CapsNet
7622d38 (PyTorch 2.13, CPU).
"""

import argparse
import importlib.util
import os

import numpy as np

BATCH, NUM_INPUTS, NUM_OUTPUTS = 2, 6, 3


def _module(authors_code, relative_path):
    """The authors' module at `relative_path`, loaded by file."""
    path = os.path.join(authors_code, relative_path)
    spec = importlib.util.spec_from_file_location(
        os.path.splitext(os.path.basename(path))[0], path
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def self_attention(authors_code, rng):
    """Efficient-CapsNet's `FCCaps` (float32: the layer casts to it)."""
    layers = _module(authors_code, "utils/layers.py")
    dim_in, dim_out = 5, 4
    layer = layers.FCCaps(NUM_OUTPUTS, dim_out)
    # Squashed inputs, as the authors' primary capsules: lengths in (0, 1).
    vectors = rng.normal(size=(BATCH, NUM_INPUTS, dim_in))
    vectors *= rng.uniform(0.1, 0.9, size=(BATCH, NUM_INPUTS, 1)) / (
        np.linalg.norm(vectors, axis=-1, keepdims=True)
    )
    layer.build(vectors.shape)
    weights = rng.normal(size=(NUM_OUTPUTS, NUM_INPUTS, dim_in, dim_out))
    priors = rng.normal(size=(NUM_OUTPUTS, NUM_INPUTS, 1)) * 0.1
    layer.W.assign(weights.astype("float32"))
    layer.b.assign(priors.astype("float32"))
    capsules = layer(vectors.astype("float32")).numpy()
    return {
        "vectors": vectors.astype("float32"),
        "W": weights.astype("float32"),
        "b": priors.astype("float32"),
        "capsules": capsules,
    }


def inverted_attention(authors_code, rng):
    """`CapsuleFC` with 4x4 poses, two iterations (float64)."""
    import sys

    import torch

    sys.path.insert(0, authors_code)
    layers = importlib.import_module("src.layers")
    layer = layers.CapsuleFC(NUM_INPUTS, 16, NUM_OUTPUTS, 16, True, 0.0)
    layer = layer.double().eval()
    poses = rng.normal(size=(BATCH, NUM_INPUTS, 16))
    weights = rng.normal(size=(NUM_INPUTS, 4, 4, NUM_OUTPUTS)) * 0.5
    scale = 1.0 + 0.2 * rng.normal(size=16)
    offset = 0.2 * rng.normal(size=16)
    with torch.no_grad():
        layer.w.copy_(torch.from_numpy(weights))
        layer.nonlinear_act.weight.copy_(torch.from_numpy(scale))
        layer.nonlinear_act.bias.copy_(torch.from_numpy(offset))
        inputs = torch.from_numpy(poses)
        parents = [layer(inputs, 0)]
        for iteration in range(1, 3):
            parents.append(layer(inputs, iteration, parents[-1]))
    return {
        "poses": poses,
        "w": weights,
        "scale": scale,
        "offset": offset,
        # parents_<t>: the poses after t + 1 iterations.
        **{f"parents_{t}": p.numpy() for t, p in enumerate(parents)},
    }


def variational_bayes(authors_code, rng):
    """`VariationalBayesRouting2d` as class capsules (one position, K = 1),
    diagonal precisions, 3 iterations, the authors' priors (float64,
    evaluation mode: batch norm divides by sqrt(1 + 1e-5)), with 4 parents:
    the layer starts from responsibilities 1 / n_out in float32, exact for
    4."""
    import torch

    torch.Tensor.cuda = lambda tensor, *args, **kwargs: tensor  # On CPU.
    module = _module(authors_code, "src/vb_routing.py")
    dim, num_outputs = 16, 4
    layer = module.VariationalBayesRouting2d(
        in_caps=NUM_INPUTS,
        out_caps=num_outputs,
        pose_dim=4,
        kernel_size=1,
        stride=1,
        alpha0=1.0,
        m0=torch.zeros(dim),
        kappa0=1.0,
        Psi0=torch.eye(dim),
        nu0=dim + 1,
        cov="diag",
        iter=3,
        class_caps=True,
    )
    layer = layer.double().eval()
    # Votes of scale 0.3: at scale 1 in 16 dimensions every likelihood
    # p[i, j] is below 1e-11, where the authors' code divides by 1e-11
    # instead of sum_j p[i, j] (its clamp), and its responsibilities no
    # longer sum to 1; the check below makes sure they do here.
    votes = 0.3 * rng.normal(size=(BATCH, NUM_INPUTS, num_outputs, dim))
    activations = rng.uniform(0.05, 0.95, size=(BATCH, NUM_INPUTS))
    beta_u = rng.normal(size=num_outputs)
    beta_a = rng.normal(size=num_outputs)
    with torch.no_grad():
        layer.beta_u.copy_(torch.from_numpy(beta_u).reshape(layer.beta_u.shape))
        layer.beta_a.copy_(torch.from_numpy(beta_a).reshape(layer.beta_a.shape))
        outputs, means = layer(
            torch.from_numpy(activations).reshape(BATCH, NUM_INPUTS, *[1] * 7),
            torch.from_numpy(votes).reshape(
                BATCH, NUM_INPUTS, num_outputs, dim, *[1] * 5
            ),
        )
    totals = layer.R_j.numpy().reshape(BATCH, num_outputs).sum(axis=-1)
    np.testing.assert_allclose(totals, activations.sum(axis=-1), rtol=1e-12)
    return {
        "votes": votes,
        "activations": activations,
        "beta_u": beta_u,
        "beta_a": beta_a,
        "outputs": outputs.numpy(),
        "means": means.numpy().reshape(BATCH, num_outputs, dim),
    }


def self_routing(authors_code, rng):
    """`SelfRouting2d` as fully connected capsules (kernel 1 on a 1x1
    map), poses of 8, votes of 4 (float64)."""
    import sys

    import torch

    sys.path.insert(0, authors_code)  # modules.py imports its utils.py.
    module = _module(authors_code, "modules.py")
    dim_in, dim_out = 8, 4
    layer = module.SelfRouting2d(
        NUM_INPUTS, NUM_OUTPUTS, dim_in, dim_out, 1, 1, 0, pose_out=True
    ).double()
    activations = rng.uniform(0.05, 0.95, size=(BATCH, NUM_INPUTS))
    poses = rng.normal(size=(BATCH, NUM_INPUTS, dim_in))
    vote_weights = rng.normal(size=(NUM_INPUTS, NUM_OUTPUTS * dim_out, dim_in))
    routing_weights = rng.normal(size=(NUM_INPUTS, NUM_OUTPUTS, dim_in))
    routing_bias = rng.normal(size=(1, 1, NUM_INPUTS, NUM_OUTPUTS))
    with torch.no_grad():
        layer.W1.copy_(torch.from_numpy(vote_weights))
        layer.W2.copy_(torch.from_numpy(routing_weights))
        layer.b2.copy_(torch.from_numpy(routing_bias))
        outputs, parent_poses = layer(
            torch.from_numpy(activations)[:, :, None, None],
            torch.from_numpy(poses).reshape(BATCH, -1, 1, 1),
        )
    return {
        "activations": activations,
        "poses": poses,
        "W1": vote_weights,
        "W2": routing_weights,
        "b2": routing_bias,
        "outputs": outputs.numpy().reshape(BATCH, NUM_OUTPUTS),
        "parent_poses": parent_poses.numpy().reshape(
            BATCH, NUM_OUTPUTS, dim_out
        ),
    }


FAMILIES = {
    "self_attention": self_attention,
    "inverted_attention": inverted_attention,
    "variational_bayes": variational_bayes,
    "self_routing": self_routing,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), required=True)
    parser.add_argument("--authors_code", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(sorted(FAMILIES).index(args.family))
    arrays = FAMILIES[args.family](args.authors_code, rng)
    path = os.path.join(os.path.dirname(__file__), f"{args.family}.npz")
    np.savez(path, **arrays)
    print(f"wrote {path}: {sorted(arrays)}")


if __name__ == "__main__":
    main()
