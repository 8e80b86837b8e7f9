"""Checks on outside input that every reader shares, so malformed data gets a message naming
what and where instead of a traceback or a silently wrong value.

JSON from files and databases is parsed strictly: NaN and Infinity are refused (they are not
JSON, and an export would write invalid JSON), integers are bounded, nesting is bounded, and
text must be valid Unicode (a lone surrogate cannot be stored). Field values are checked
against the type a template manifest declares for them (text, list of text, object). Source
ids must be non-empty text or integers.
"""

from __future__ import annotations

import json
import re

from calibrate.model import CalibrateError

MAX_INT_DIGITS = 30
MAX_DEPTH = 64
FIELD_TYPES = ("text", "list of text", "object")


class InputError(CalibrateError, ValueError):
    """A value from outside that calibrate cannot take; the message says what is wrong."""


def refuse_constant(name: str):
    raise InputError(f"{name} is not a number calibrate accepts (JSON has no NaN or Infinity)")


def bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise InputError(f"an integer of {digits} digits is too large")
    return int(text)


def finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise InputError(f"{text} is too large for a number")
    return value


STRICT_JSON = json.JSONDecoder(parse_constant=refuse_constant, parse_int=bounded_int, parse_float=finite_float)
"""A JSON decoder that refuses NaN, Infinity, huge integers and numbers too large for a float."""

# A \uD800-\uDFFF escape: the only way valid UTF-8 text can hold a (lone) surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _decode_whole(text: str):
    """STRICT_JSON.decode(text), without its two scans for whitespace when the value starts the
    text and at most a line ending follows it (a JSONL line); otherwise, and on any error,
    decode's own result or error."""
    try:
        value, end = STRICT_JSON.scan_once(text, 0)
    except StopIteration:
        return STRICT_JSON.decode(text)
    if end == len(text) or text[end:] in ("\n", "\r\n"):
        return value
    return STRICT_JSON.decode(text)


def parse_json_value(text: str, what: str = "value"):
    """`text` as JSON, or InputError naming `what`: malformed JSON, NaN/Infinity, huge
    integers, deep nesting and lone surrogates are all refused."""
    try:
        value = _decode_whole(text)
    except InputError as exc:
        raise InputError(f"{what}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"{what}: {exc}") from None
    # walking the value costs more than parsing it: only when the text could hold a surrogate
    # (looked for with the regex only where a \u escape is, which `in` finds faster) or nest
    # deeper than allowed
    if ("\\u" in text and _SURROGATE_ESCAPE.search(text)) or text.count("[") + text.count("{") > MAX_DEPTH:
        check_value(value, what)
    return value


def check_value(value, what: str = "value", depth: int = 0) -> None:
    """InputError if `value` nests deeper than MAX_DEPTH, holds a float that is not finite, or
    text that is not valid Unicode (a lone surrogate)."""
    if depth > MAX_DEPTH:
        raise InputError(f"{what}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"{what}: text holds a lone surrogate (invalid Unicode)") from None
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InputError(f"{what}: {value} is not a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_value(key, what, depth + 1)
            check_value(item, f"{what}.{key}" if depth == 0 else what, depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_value(item, what, depth + 1)


def source_id(value, what: str = "id") -> str:
    """A source id as stored: non-empty text, or an integer (as its digits)."""
    if isinstance(value, bool) or value is None or not isinstance(value, str | int):
        raise InputError(f"{what} must be a non-empty string or an integer, not {json.dumps(value)[:40]}")
    text = str(value)
    if not text.strip():
        raise InputError(f"{what} must not be empty")
    return text


def type_of(value) -> str:
    """The field type `value` has, in a manifest's words (or a JSON type name)."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "list of text"
    if isinstance(value, dict):
        return "object"
    return {list: "list", bool: "boolean", int: "number", float: "number", type(None): "null"}.get(type(value), "value")


def check_field_type(name: str, value, declared: str) -> None:
    """InputError unless `value` has the type the manifest declares (alternatives joined by
    " or ", e.g. "text or object")."""
    if declared == "text" and isinstance(value, str):
        return
    allowed = declared.split(" or ")
    actual = type_of(value)
    if actual not in allowed:
        raise InputError(f"field {name!r} must be {declared}, got {actual}")
