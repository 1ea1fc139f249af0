"""Runs an example without TensorFlow's native start-up lines.

TensorFlow's C++ libraries write registration and device-probing lines
to the process's standard error while it is imported and first probes
its devices, before its logging settings (`TF_CPP_MIN_LOG_LEVEL`) apply.
This does both with file descriptor 2 pointed at a temporary file, sets
`TF_CPP_MIN_LOG_LEVEL=1` (warnings and errors) unless it is set, then
runs the module:

  python -m examples.quiet_start examples.demo --model_dir=demo_output

If the import fails, the captured lines are printed with the error. Set
`KERAS_CAPSULES_NATIVE_LOGS=1` to keep them.
"""

import os
import runpy
import sys
import tempfile


def import_tensorflow_quietly():
    """Imports TensorFlow with the native standard error captured, and
    its later native logging at warnings and errors only (unless
    `TF_CPP_MIN_LOG_LEVEL` is set)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    if os.environ.get("KERAS_CAPSULES_NATIVE_LOGS") == "1":
        import tensorflow  # noqa: F401, PLC0415

        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: PLC0415

            # The first device query probes for GPUs (a cuInit error line
            # on machines without one).
            tensorflow.config.list_physical_devices()
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read())
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if argv[1:] else 2)
    module = argv[1]
    import_tensorflow_quietly()
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv)
