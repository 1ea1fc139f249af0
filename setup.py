"""Packaging for keras_capsules."""

import pathlib
import re

import setuptools

_ROOT = pathlib.Path(__file__).parent


def _version():
    text = (_ROOT / "keras_capsules" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _requirements():
    lines = (_ROOT / "requirements.txt").read_text().splitlines()
    return [
        line.strip()
        for line in lines
        if line.strip() and not line.startswith("#")
    ]


setuptools.setup(
    name="keras-capsules",
    version=_version(),
    description="Capsule networks for Keras 3: routing, capsule regression, "
    "matrix capsules, generative capsules.",
    long_description=(_ROOT / "README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=setuptools.find_packages(include=["keras_capsules*"]),
    python_requires=">=3.10",
    install_requires=_requirements(),
    license="Apache-2.0",
)
