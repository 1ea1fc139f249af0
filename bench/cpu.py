"""The machine's CPU by name, without any framework."""

import platform


def cpu_model():
    """The CPU's model name from `/proc/cpuinfo`, or `platform`'s guess."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
