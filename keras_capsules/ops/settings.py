"""The base of the library's settings objects: frozen dataclasses with
named presets (`CapsNetConfig`, `EMRouting`, `GenerativeCapsuleConfig`,
`EMSchedule`), which a model or layer takes as one argument."""

import dataclasses

from keras_capsules.ops.arguments import positive_int, positive_number


class Settings:
    """Methods of a frozen dataclass of settings.

    A subclass sets `PRESETS`, `{name: instance}`, after it is defined,
    and `KIND`, what its settings are of (for the messages).
    """

    KIND = "these"
    PRESETS = {}

    def replace(self, **changes):
        """A copy with `changes` (any of the fields)."""
        return dataclasses.replace(self, **changes)

    def get_config(self):
        """The settings as a dict of plain values."""
        return dataclasses.asdict(self)

    def _check_positive_ints(self, *names):
        """Stores each named field as a Python int; raises a ValueError
        unless it is an integer >= 1."""
        for name in names:
            value = positive_int(type(self).__name__, name, getattr(self, name))
            object.__setattr__(self, name, value)

    def _check_positive(self, *names):
        """Raises a ValueError unless each named field is a number > 0."""
        for name in names:
            positive_number(type(self).__name__, name, getattr(self, name))

    def _check_options(self, **options):
        """Raises a ValueError unless each named field is one of its
        options (`name=allowed values`)."""
        for name, allowed in options.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(
                    f"`{type(self).__name__}` expects `{name}` to be one of "
                    f"{allowed}. Received: {name}={value!r}."
                )

    @classmethod
    def preset(cls, name):
        """The named settings of `PRESETS`."""
        if name not in cls.PRESETS:
            raise ValueError(
                f"Unknown {cls.KIND} preset {name!r}. Expected one of "
                f"{tuple(cls.PRESETS)}, or a `{cls.__name__}`."
            )
        return cls.PRESETS[name]

    @classmethod
    def get(cls, value):
        """The settings of an instance, a preset's name, a dict of the
        fields or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls.preset(value)
        if isinstance(value, dict):
            return cls(**value)
        if isinstance(value, cls):
            return value
        raise ValueError(
            f"Expected {cls.KIND} settings: a `{cls.__name__}`, one of "
            f"{tuple(cls.PRESETS)} or a dict of its fields. Received: "
            f"{value!r}."
        )
