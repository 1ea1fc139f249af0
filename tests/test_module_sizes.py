"""No module of the package or the examples is over STYLE.md's limit
of about 300 lines: past it a module usually holds two concepts."""

import pathlib

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_LIMIT = 300


def test_no_module_is_over_the_limit():
    sizes = {
        str(path.relative_to(_ROOT)): len(path.read_text().splitlines())
        for folder in ("keras_capsules", "examples")
        for path in (_ROOT / folder).rglob("*.py")
    }
    assert len(sizes) > 100
    over = {path: lines for path, lines in sizes.items() if lines > _LIMIT}
    assert not over, f"split these modules (lines): {over}"
