"""Backend-specific fast paths of the ops: one package per Keras backend
that has any (`tensorflow/`, `torch/`). The ops reach them through one
dispatch, `keras_capsules.ops.fast_paths`, which imports a backend's
package only when that backend runs."""
