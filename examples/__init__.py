"""The example scripts, run as `python -m examples.NAME --flags`.

Python imports this package before the script, so what it sets here
holds before TensorFlow is imported: TensorFlow's oneDNN CPU kernels are
turned on (`TF_ENABLE_ONEDNN_OPTS=1`) unless the variable is already set.
TensorFlow turns them on by itself only on CPUs with AVX-512 VNNI,
AVX-512 BF16, AVX-VNNI or AMX; elsewhere (for instance on AVX2-only AMD
EPYC cores) it runs Eigen's kernels, and there the library's routing
steps ran 1.2-3.6x slower in `tf.function` (research/speed.md).
`TF_ENABLE_ONEDNN_OPTS=0 python -m examples.NAME` keeps TensorFlow's own
choice.
"""

from examples.runtime import use_onednn_unless_set

use_onednn_unless_set()
