"""The code blocks of a Markdown page: Python to run, shell commands to
check."""

import re
import shlex

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def _blocks(text, languages):
    return [
        body for language, body in _FENCE.findall(text) if language in languages
    ]


def python_blocks(text):
    """The bodies of the page's ```python blocks, in order."""
    return _blocks(text, {"python"})


def commands(text):
    """Each `python -m MODULE ...` and `bash SCRIPT ...` command of the
    page's ```bash blocks, continuation lines joined, comments and
    leading variable assignments removed."""
    found = []
    for body in _blocks(text, {"bash", "sh"}):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and _ASSIGNMENT.match(words[0]):
                words = words[1:]
            if words[:2] == ["python", "-m"] or words[:1] == ["bash"]:
                found.append(shlex.join(words))
    return found
