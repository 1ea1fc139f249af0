"""Every use of a private TensorFlow or Keras API in the library and its
examples, each a workaround for what the public APIs do not offer.

Each names what it reads or patches and is tested against the installed
releases (tests/test_private_apis.py), so that a release that moves it
fails there first. Written for, and tested with, the releases in
`COVERED`: the oldest (constraints-oldest.txt, `make test-oldest`) and the
newest that requirements.txt allows (`make test`).
"""

import importlib

import keras

# (oldest, newest) release of each library these workarounds are tested on.
COVERED = {"tensorflow": ("2.16", "2.21"), "keras": ("3.10", "3.15")}


def compiling_with_xla():
    """True while tracing a function that XLA compiles
    (`tf.function(jit_compile=True)`, Keras's `jit_compile=True`).

    No public API says so; this reads TensorFlow's XLA context of the
    graph being built (`tensorflow.python.ops.control_flow_util`). If it
    moves, the answer is False: callers then take their form for
    TensorFlow's own kernels, and keep their assertions, equally correct.
    """
    import tensorflow as tf  # noqa: PLC0415

    try:
        from tensorflow.python.ops import control_flow_util  # noqa: PLC0415
    except ImportError:  # pragma: no cover - depends on TensorFlow's layout
        return False
    if tf.executing_eagerly():
        return False
    try:
        graph = tf.compat.v1.get_default_graph()
        return bool(control_flow_util.GraphOrParentsInXlaContext(graph))
    except AttributeError:  # pragma: no cover
        return False


def set_initial_epoch(model, epoch):
    """Makes the running `model.fit` start at `epoch` (None: as asked),
    from a callback's `on_train_begin`: the private `model._initial_epoch`,
    which `fit` reads after it, as Keras's own `BackupAndRestore` sets
    it."""
    model._initial_epoch = epoch


def variable_index(optimizer, variable):
    """The index of `variable`'s state in a custom optimizer's slot lists,
    as Keras's own optimizers find it (`Optimizer._get_variable_index`)."""
    return optimizer._get_variable_index(variable)


def work_around_multi_worker_fit(model):
    """Lets `model.fit` run under `MultiWorkerMirroredStrategy`.

    Keras 3 (up to at least 3.15) fails every multi-worker `fit` in two
    places (keras-team/keras#20585):

    - at the start, it builds the metrics from the first batch reduced
      across replicas with `strategy.reduce`, which this strategy cannot
      do for a nested batch ("Attempt to convert a value (PerReplica
      ...)"); the build needs only the batch's shapes and dtypes, so it
      gets zeros of the data's element spec here (drawing no batch, which
      would also move the data's shuffle on by one pass);
    - after each step, it reduces the step's logs with `strategy.reduce(
      "MEAN", value, axis=0)`, which fails on the scalar logs ("Invalid
      reduction dimension 0 for input with 0 dimensions"); scalars are
      reduced over the replicas alone here.

    Does nothing under other strategies and on other backends.
    """
    if keras.backend.backend() != "tensorflow":
        return
    import tensorflow as tf  # noqa: PLC0415

    strategy = model.distribute_strategy
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    def zeros(spec):
        shape = [1 if size is None else size for size in spec.shape]
        return tf.zeros(shape, spec.dtype)

    def maybe_symbolic_build(iterator=None, data_batch=None):
        if iterator is not None:
            spec = iterator.data_adapter.get_tf_dataset().element_spec
            data_batch = tf.nest.map_structure(zeros, spec)
        with strategy.scope():
            model._symbolic_build(data_batch=data_batch)

    model._maybe_symbolic_build = maybe_symbolic_build
    trainer = importlib.import_module("keras.src.backend.tensorflow.trainer")
    if getattr(trainer.reduce_per_replica, "_scalar_safe", False):
        return
    reduce_per_replica = trainer.reduce_per_replica

    def scalar_safe_reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):

            def mean(value):
                local = value
                if isinstance(value, tf.distribute.DistributedValues):
                    local = strategy.experimental_local_results(value)[0]
                if tf.is_tensor(local) and local.shape.rank == 0:
                    return strategy.reduce("MEAN", value, axis=None)
                return reduce_per_replica(value, strategy, reduction)

            return tf.nest.map_structure(mean, values)
        return reduce_per_replica(values, strategy, reduction)

    scalar_safe_reduce_per_replica._scalar_safe = True
    trainer.reduce_per_replica = scalar_safe_reduce_per_replica
