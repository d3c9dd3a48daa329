"""Wire types: a JSON shape declared once as a frozen dataclass, checked and described from it.

Each field of a body (wire/bodies.py) carries a `Rule` in its metadata (`wired()`): its
constraints, and the registered error (wire/errors.py) each breach is refused with, so a field
that has its own code today (`text_too_long`) keeps it. `parse_body()` checks a request's JSON
against the type and returns the typed value; `json_schema()` describes the same type for the
OpenAPI document (openapi.py; OpenAPI 3.1 and later use JSON Schema 2020-12). Pure: no Flask.

A field's annotation says its JSON type: `str`, `int`, `str | None`, a tuple of another
wire dataclass (an array of objects), or a `dict` (a JSON object of its own rules: a host
page's context). A field without a default is required. A top-level body's
fields are checked one after another, in the order they are declared (the first failing one
answers); an item of an array has its shape (every field present and of its type) checked
before any of its values (`attachments/sending.py` checked files that way).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from ..errors import ApiError
from ..messages import clean_text
from .errors import INVALID_BODY, UNKNOWN_FIELD, HttpError

# The metadata key of a field's Rule.
RULE_KEY = "widget_server.wire"
# How much of a refused value an error's details quote.
_QUOTED_CHARS = 64


@dataclass(frozen=True)
class Refusal:
    """A registered error and its message: a `str.format` template over the facts of the
    refusal (`field`, `length`, `limit`, `count`, and the field's own name for its value, cut to
    64 characters); `details` names the facts the error's `details` carry."""

    error: HttpError
    message: str
    details: tuple[str, ...] = ()

    def __call__(self, **facts: Any) -> ApiError:
        details = {name: facts[name] for name in self.details}
        return self.error(self.message.format(**facts), details=details or None)


@dataclass(frozen=True)
class Limit:
    """A bound the server's settings choose (`setting`, docs/settings): its value comes with each
    call of `parse_body`, so one declaration serves every configuration. `most` is the setting's
    own upper bound, the only figure the document can promise."""

    setting: str
    most: int | None = None


@dataclass(frozen=True)
class Rule:
    """What a field's value must be on the wire, and how each breach is refused.

    The checks of a string run in this order: absent (`absent` values count as absent), type
    (`wrong`), `clean` (messages.clean_text), blank (`blank`, unless the raw body's
    `blank_allowed_with` field is truthy: then ""), `accepts` (on the value as sent), `strip`,
    `pattern`, `enum`, length (`too_long`, else `wrong`). An object's: type (`wrong`), its
    compact JSON's UTF-8 bytes against `max_length` (`too_long`), `accepts` (`invalid`)."""

    # Not of the field's type, or absent when required. None: a response's field, never read.
    wrong: Refusal | None = None
    absent: tuple[object, ...] = ()
    clean: bool = False
    strip: bool = False
    blank: Refusal | None = None
    blank_allowed_with: str | None = None
    # A check JSON Schema cannot say (refused with `invalid`, else `wrong`); the document
    # says it in `description`.
    accepts: Callable[[Any], bool] | None = None
    pattern: str | None = None
    # Refused when `pattern` or `accepts` fails; `wrong` when not given.
    invalid: Refusal | None = None
    # The pattern is only documented: the route checks it with a header's value
    # (an action confirm's Idempotency-Key, actions/service.py).
    pattern_checked_by_route: bool = False
    enum: tuple[str, ...] = ()
    # Documented only: the one value a response's field always has (an event's `incomplete`).
    const: str | bool | None = None
    min_length: int | None = None
    max_length: int | Limit | None = None
    too_long: Refusal | None = None
    minimum: int | None = None
    maximum: int | None = None
    # Documented only: the fewest items a response's array has when present.
    min_items: int | None = None
    max_items: int | Limit | None = None
    too_many: Refusal | None = None
    # Items of an array: the item field whose values must all differ.
    unique: str | None = None
    duplicate: Refusal | None = None
    # Items of an array: a bare string stands for an item with only this field.
    shorthand: str | None = None
    # Documented only (the server writes these values): JSON Schema's `format`, and whether
    # null is a value of the field (a body's field is also nullable where null counts as absent).
    format: str | None = None
    nullable: bool = False
    description: str = ""

    def refuse(self, **facts: Any) -> ApiError:
        """The field's `wrong` refusal; a response's field has none, and is never parsed."""
        if self.wrong is None:
            raise TypeError(f"{facts.get('field')} is a response's field: no request carries it")
        return self.wrong(**facts)


def wired(rule: Rule, *, default: object = dataclasses.MISSING, **changes: Any) -> Any:
    """A dataclass field checked by `rule` (with `changes`, such as its own `description`)."""
    metadata = {RULE_KEY: dataclasses.replace(rule, **changes) if changes else rule}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, tuple | str | int) or default is None:
        return dataclasses.field(default=default, metadata=metadata)
    raise TypeError("a wire field's default is immutable: a str, an int, a tuple or None")


class WireType(Protocol):
    """A wire dataclass. An item type (one in an array) names the refusal of a malformed
    item in `SHAPE`; a body refuses an unknown field with 400 `unknown_field`."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


BodyT = TypeVar("BodyT", bound=WireType)


@dataclass(frozen=True)
class _Field:
    name: str
    rule: Rule
    required: bool
    default: object
    kind: type  # str or int, or the item type of an array
    array: bool


@functools.cache
def fields_of(wire_type: type) -> tuple[_Field, ...]:
    """The type's fields, read once per type."""
    hints = typing.get_type_hints(wire_type)
    found = []
    for field in dataclasses.fields(wire_type):
        rule = field.metadata.get(RULE_KEY)
        if not isinstance(rule, Rule):
            raise TypeError(f"{wire_type.__name__}.{field.name} has no wire Rule")
        hint = hints[field.name]
        arguments = typing.get_args(hint)
        array = typing.get_origin(hint) is tuple
        if array:
            kind = arguments[0]
        elif type(None) in arguments:  # `str | None`: the value's type is the other one
            (kind,) = [argument for argument in arguments if argument is not type(None)]
        else:
            kind = hint
        if typing.get_origin(kind) is dict:
            kind = dict  # a JSON object the type says nothing more of (an action's arguments)
        if kind not in (str, int, bool, dict) and not dataclasses.is_dataclass(kind):
            raise TypeError(f"{wire_type.__name__}.{field.name}: a wire field is a str, an int, a bool or wire types")
        required = field.default is dataclasses.MISSING
        found.append(_Field(field.name, rule, required, field.default, kind, array))
    return tuple(found)


@functools.cache
def _names_of(wire_type: type) -> frozenset[str]:
    return frozenset(field.name for field in fields_of(wire_type))


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_ABSENT = object()


def parse_body(body_type: type[BodyT], value: object, limits: Mapping[Limit, int]) -> BodyT:
    """`value` (a request's JSON) as a `body_type`, or the registered error of its first breach.
    `limits` gives each `Limit` its configured value."""
    if not isinstance(value, dict):
        raise INVALID_BODY("The request body must be a JSON object.")
    return _parse_object(body_type, value, limits, shape=None)


def _parse_object(
    wire_type: type[BodyT], value: dict[str, Any], limits: Mapping[Limit, int], shape: Refusal | None
) -> BodyT:
    declared = fields_of(wire_type)
    if not value.keys() <= _names_of(wire_type):
        unknown = sorted(set(value) - _names_of(wire_type))
        if shape is not None:
            raise shape()
        names = " and ".join(field.name for field in declared)
        raise UNKNOWN_FIELD(f"Unknown field(s): {', '.join(unknown)}. Send only {names}.")
    # An item's shape first, all of it; a body's fields one by one.
    shaped = {field.name: _present(field, value) for field in declared} if shape is not None else None
    parsed: dict[str, object] = {}
    for field in declared:
        raw = shaped[field.name] if shaped is not None else _present(field, value)
        parsed[field.name] = field.default if raw is _ABSENT else _checked(field, raw, value, limits)
    make: Callable[..., BodyT] = wire_type
    return make(**parsed)


def _present(field: _Field, body: dict[str, Any]) -> object:
    """The field's raw value, type-checked, or _ABSENT; refused if required and absent."""
    raw = body.get(field.name, _ABSENT)
    if (raw is None and None in field.rule.absent) or (raw == "" and "" in field.rule.absent):
        raw = _ABSENT
    if raw is _ABSENT:
        if field.required:
            raise field.rule.refuse(field=field.name)
        return _ABSENT
    if field.array:
        wrong_type = not isinstance(raw, list)
    elif field.kind is dict:
        wrong_type = not isinstance(raw, dict)
    elif field.kind is str:
        wrong_type = not isinstance(raw, str)
    else:  # JSON's true and false are no numbers, though Python's bool is an int
        wrong_type = isinstance(raw, bool) or not isinstance(raw, int)
    if wrong_type:
        raise field.rule.refuse(field=field.name)
    return raw


def _checked(field: _Field, raw: object, body: dict[str, Any], limits: Mapping[Limit, int]) -> object:
    rule = field.rule
    if field.array:
        assert isinstance(raw, list)
        return _checked_items(field, raw, limits)
    if isinstance(raw, dict):
        return _checked_object(field, raw, limits)
    if isinstance(raw, int):
        if (rule.minimum is not None and raw < rule.minimum) or (rule.maximum is not None and raw > rule.maximum):
            raise rule.refuse(field=field.name)
        return raw
    assert isinstance(raw, str)
    text = clean_text(raw) if rule.clean else raw
    if not text.strip() and (rule.blank is not None or rule.blank_allowed_with is not None):
        if rule.blank_allowed_with is not None and body.get(rule.blank_allowed_with):
            return ""
        if rule.blank is not None:
            raise rule.blank(field=field.name)
    if rule.accepts is not None and not rule.accepts(text):
        raise (rule.invalid or rule.refuse)(**_quoted(field, text))
    if rule.strip:
        text = text.strip()
    if (
        rule.pattern is not None
        and not rule.pattern_checked_by_route
        and _compiled(rule.pattern).fullmatch(text) is None
    ):
        raise (rule.invalid or rule.refuse)(**_quoted(field, text))
    if rule.enum and text not in rule.enum:
        raise rule.refuse(**_quoted(field, text))
    if rule.max_length is not None:
        limit = _limit(rule.max_length, limits)
        if len(text) > limit:
            raise (rule.too_long or rule.refuse)(field=field.name, length=len(text), limit=limit)
    return text


def _checked_object(field: _Field, raw: dict[str, Any], limits: Mapping[Limit, int]) -> dict[str, Any]:
    """An object field: bounded by its compact JSON's UTF-8 bytes (what a store keeps), then
    its own rules (`accepts`)."""
    rule = field.rule
    if rule.max_length is not None:
        limit = _limit(rule.max_length, limits)
        size = len(json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        if size > limit:
            raise (rule.too_long or rule.refuse)(field=field.name, length=size, limit=limit)
    if rule.accepts is not None and not rule.accepts(raw):
        raise (rule.invalid or rule.refuse)(field=field.name)
    return raw


def _quoted(field: _Field, text: str) -> dict[str, str]:
    """A refused text's words for its message: the field's name and the text's beginning."""
    return {"field": field.name, field.name: text[:_QUOTED_CHARS]}


def _checked_items(field: _Field, raw: list[Any], limits: Mapping[Limit, int]) -> tuple[object, ...]:
    rule = field.rule
    if rule.max_items is not None:
        limit = _limit(rule.max_items, limits)
        if len(raw) > limit:
            raise (rule.too_many or rule.refuse)(field=field.name, count=len(raw), limit=limit)
    item_type: type[WireType] = field.kind
    shape: Refusal | None = getattr(item_type, "SHAPE", rule.wrong)
    if shape is None:
        raise TypeError(f"{field.name} is a response's field: no request carries it")
    items = []
    for item in raw:
        if isinstance(item, str) and rule.shorthand is not None:
            item = {rule.shorthand: item}
        if not isinstance(item, dict):
            raise shape()
        items.append(_parse_object(item_type, item, limits, shape))
    if rule.unique is not None:
        keys = [getattr(item, rule.unique) for item in items]
        if len(set(keys)) != len(keys):
            raise (rule.duplicate or rule.refuse)(field=field.name)
    return tuple(items)


def refusals_of(wire_type: type) -> list[HttpError]:
    """Every registered error a body of `wire_type` may be refused with, in the order its
    fields declare them (an array's items included): what the document lists for its route."""
    found: list[HttpError] = []
    shape: Refusal | None = getattr(wire_type, "SHAPE", None)
    if shape is not None:
        found.append(shape.error)
    for field in fields_of(wire_type):
        rule = field.rule
        for refusal in (rule.wrong, rule.blank, rule.invalid, rule.too_long, rule.too_many, rule.duplicate):
            if refusal is not None:
                found.append(refusal.error)
        if dataclasses.is_dataclass(field.kind):
            found += refusals_of(field.kind)
    return list(dict.fromkeys(found))


def _limit(bound: int | Limit, limits: Mapping[Limit, int]) -> int:
    return limits[bound] if isinstance(bound, Limit) else bound


# -- the same types as JSON Schema (2020-12, as OpenAPI 3.1 and 3.2 use it) ------------------


def json_schema(wire_type: type, ref: Callable[[type], str | None] | None = None) -> dict[str, Any]:
    """`wire_type` as a JSON Schema object: its fields' types and every constraint the schema
    language can say (a configured `Limit` only as far as its `most`). `ref(nested_type)` names
    the component a nested type is described by (None, or no `ref`: described in place).

    A body admits no other field; a response record (`RECORD = True`) may gain fields, which
    clients ignore, unless it says `CLOSED = True`."""
    properties: dict[str, Any] = {}
    required = []
    for field in fields_of(wire_type):
        properties[field.name] = _field_schema(field, ref)
        if field.required:
            required.append(field.name)
    schema: dict[str, Any] = {"type": "object"}
    description = getattr(wire_type, "DESCRIPTION", "")
    if description:
        schema["description"] = description
    if required:
        schema["required"] = required
    if getattr(wire_type, "CLOSED", not getattr(wire_type, "RECORD", False)):
        schema["additionalProperties"] = False
    schema["properties"] = properties
    return schema


def _nested(nested_type: type, ref: Callable[[type], str | None] | None) -> dict[str, Any]:
    name = ref(nested_type) if ref is not None else None
    return {"$ref": name} if name is not None else json_schema(nested_type, ref)


def _field_schema(field: _Field, ref: Callable[[type], str | None] | None) -> dict[str, Any]:
    rule = field.rule
    nullable = rule.nullable or None in rule.absent
    schema: dict[str, Any]
    if field.array:
        item = _nested(field.kind, ref)
        if rule.shorthand is not None:
            shorthand = next(inner for inner in fields_of(field.kind) if inner.name == rule.shorthand)
            item = {"oneOf": [_field_schema(shorthand, ref), item]}
        schema = {"type": "array"}
        if rule.min_items is not None:
            schema["minItems"] = rule.min_items
        most = _documented(rule.max_items)
        if most is not None:
            schema["maxItems"] = most
        schema["items"] = item
    elif dataclasses.is_dataclass(field.kind):
        schema = _nested(field.kind, ref)
        if nullable:
            schema = {"oneOf": [schema, {"type": "null"}]}
    elif rule.const is not None:
        schema = {"const": rule.const}
    elif rule.enum:
        schema = {"enum": list(rule.enum)}
    else:
        json_type = {str: "string", int: "integer", bool: "boolean", dict: "object"}[field.kind]
        # Null is on the wire wherever the server reads it as absent, or writes it.
        schema = {"type": [json_type, "null"] if nullable else json_type}
        if field.kind is dict:
            # An object's bound is its JSON's bytes, which JSON Schema cannot say: `description`.
            if rule.description:
                schema["description"] = rule.description
            return schema
        if rule.format is not None:
            schema["format"] = rule.format
        if rule.pattern is not None:
            schema["pattern"] = rule.pattern
        least = (
            rule.min_length
            if rule.min_length is not None
            else 1
            if rule.blank and not rule.blank_allowed_with
            else None
        )
        if least is not None:
            schema["minLength"] = least
        most = _documented(rule.max_length)
        if most is not None:
            schema["maxLength"] = most
        if rule.minimum is not None:
            schema["minimum"] = rule.minimum
        if rule.maximum is not None:
            schema["maximum"] = rule.maximum
    if rule.description:
        schema["description"] = rule.description
    return schema


def _documented(bound: int | Limit | None) -> int | None:
    return bound.most if isinstance(bound, Limit) else bound
