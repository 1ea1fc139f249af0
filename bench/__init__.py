"""Benchmarks, run as `python -m bench.NAME`; each prints JSON lines.

They run in the examples' mode: importing the `examples` package turns
TensorFlow's oneDNN CPU kernels on unless `TF_ENABLE_ONEDNN_OPTS` is set
(see `examples/__init__.py`), and every record's `device` says which
setting it ran with.
"""

import examples  # noqa: F401  (sets the examples' mode before TensorFlow)
