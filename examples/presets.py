"""Settings flags of the example scripts: a named preset, optionally with
some of its fields changed, as one flag value.

`NAME` or `NAME:field=value,field=value`, e.g.
`--preset=standardized:num_iterations=3,assignment_smoothing=0`: the
preset `NAME` (a frozen dataclass) with those fields replaced, each value
read as its field's type (a tuple's entries separated by `/`:
`decoder_units=256/512`).
"""

import dataclasses
import types

from absl import app


def parse(text, flag_name, presets):
    """The settings `text` names: `presets[NAME]` with its overrides.

    Args:
        text: `NAME` or `NAME:field=value,...`.
        flag_name: the flag's name, for the messages.
        presets: `{name: frozen dataclass}`.

    Raises:
        app.UsageError, naming what was received and what is expected.
    """
    name, _, overrides = text.partition(":")
    if name not in presets:
        raise app.UsageError(
            f"--{flag_name} names a preset of {tuple(presets)}, optionally "
            f"followed by ':field=value,...'. Received: {text!r}."
        )
    settings = presets[name]
    types = {field.name: field.type for field in dataclasses.fields(settings)}
    changes = {}
    for item in filter(None, overrides.split(",")):
        field, equals, value = item.partition("=")
        if not equals or field not in types:
            raise app.UsageError(
                f"--{flag_name} overrides fields of {tuple(types)} as "
                f"'field=value'. Received: {item!r} in {text!r}."
            )
        changes[field] = _value(value, types[field], flag_name, item)
    try:
        return dataclasses.replace(settings, **changes)
    except ValueError as error:
        raise app.UsageError(f"--{flag_name}={text}: {error}") from error


def _value(text, kind, flag_name, item):
    """`text` as a `kind` (the field's annotation: a type, its name or
    `type | None`, which also reads `none`)."""
    if isinstance(kind, types.UnionType):
        if text.lower() == "none":
            return None
        (kind,) = (arg for arg in kind.__args__ if arg is not type(None))
    kind = getattr(kind, "__name__", kind)
    try:
        if kind == "tuple":
            return tuple(int(entry) for entry in text.split("/"))
        if kind == "bool":
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if kind in ("int", "float"):
            return {"int": int, "float": float}[kind](text)
        return text
    except ValueError as error:
        raise app.UsageError(
            f"--{flag_name}: {item!r} needs a {kind} value."
        ) from error
