"""How a setting is declared: a field of a frozen dataclass made by `setting()`, which carries
the setting's name, parser, default, help and bounds (docs/configuration.md lists every one;
tests/test_docs.py checks it against these declarations)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

ENV_PREFIX = "WIDGET_SERVER_"

Area = TypeVar("Area")


class ConfigError(ValueError):
    """A setting has a value the server cannot run with."""


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.name

    def convert(self, raw: Any, source: str) -> Any:
        try:
            value = self.parse(raw)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{self.name} (from {source}): invalid value {raw!r}: {error}") from None
        if value is None:
            return value  # an optional setting left unset (parse_optional_duration)
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is below the minimum {_bound(self.minimum)}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is above the maximum {_bound(self.maximum)}")
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is not one of {', '.join(self.choices)}")
        return value


def _bound(bound: float) -> str:
    """A bound as written in docs/configuration.md: a whole number in full (94608000, not
    9.4608e+07), a fraction as it is."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def setting(
    name: str,
    parse: Callable[[Any], Any],
    default: Any,
    help: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field that is the setting `name` (read from `WIDGET_SERVER_<name>`)."""
    declared = Setting(name, parse, default, help, minimum, maximum, choices)
    return field(default=default, metadata={"setting": declared})


def declared(area: type) -> tuple[Setting, ...]:
    """The settings an area's dataclass declares, in order."""
    return tuple(item.metadata["setting"] for item in fields(area) if "setting" in item.metadata)


def build(area: type[Area], values: Mapping[str, Any]) -> Area:
    """The area's settings object from the validated values by name."""
    declared_fields = [item for item in fields(area) if "setting" in item.metadata]  # type: ignore[arg-type]
    return area(**{item.name: values[item.metadata["setting"].name] for item in declared_fields})
