"""Tool-call arguments as written by an agent, made to fit the tool's input schema before the call.

Agents write `"year": "2015"` for an integer, a JSON string for the whole arguments object, a bare value
where a list is expected. Typed servers refuse those, and the refusal would then be scored, so each value
is converted to its property's declared type where that is unambiguous; anything that does not convert is
sent unchanged and the server decides. The rules follow VAKRA's evaluator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """The arguments object: a dict, a JSON string holding one, or nothing; ValueError otherwise."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"arguments must be a JSON object, got a JSON {type(raw).__name__}")
    return raw


def coerce_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Each argument converted to the type its property declares (unknown properties are left alone)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return dict(arguments)
    return {key: coerce_value(value, properties.get(key)) for key, value in arguments.items()}


def coerce_value(value: Any, schema: Any) -> Any:
    """One value converted to `schema`'s type; unchanged when it does not convert cleanly."""
    kind, schema = _declared_type(schema)
    try:
        if kind == "integer":
            return _to_int(value)
        if kind == "number":
            return _to_float(value)
        if kind == "boolean":
            return _to_bool(value)
        if kind == "string":
            return _to_str(value)
        if kind == "array":
            return _to_list(value, schema)
        if kind == "object":
            return _to_object(value, schema)
    except (ValueError, TypeError, OverflowError):
        pass
    return value


def _declared_type(schema: Any) -> tuple[str | None, Mapping[str, Any]]:
    """The first non-null type of a property (`type` as a string or a list, or an anyOf/oneOf branch)."""
    if not isinstance(schema, Mapping):
        return None, {}
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if isinstance(kind, str) and kind != "null":
        return kind, schema
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        found, sub = _declared_type(branch)
        if found:
            return found, sub
    return None, schema


def _to_int(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            number = float(text)
            return int(number) if number.is_integer() else value
    return value


def _to_float(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return value
    number = float(value.strip() if isinstance(value, str) else value)
    return number if math.isfinite(number) else value


def _to_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    return value


def _to_str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def _to_list(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value.strip().startswith("["):
        parsed = json.loads(value)
        if isinstance(parsed, list):
            value = parsed
    if not isinstance(value, list):
        value = [value]
    items = schema.get("items")
    return [coerce_value(v, items) for v in value] if isinstance(items, Mapping) else value


def _to_object(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value.strip().startswith("{"):
        value = json.loads(value)
    if isinstance(value, dict):
        return coerce_arguments(value, schema)
    return value
