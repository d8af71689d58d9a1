"""Type-level validation of decoded requests, driven by the dataclass annotations.

A request reaches the shard as Python objects that anybody could have built: a Ray client can
send a string where an int32 belongs, a list of ten million entries, or a nested struct of the
wrong class. The rules in the group modules assume well-typed input, so every request passes
through ``check_types`` first; a violation becomes INVALID_REQUEST with the offending path in
the message, and nothing else runs.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, get_args, get_origin

from protocol.errors import CoordinatorError, Errors
from protocol.types import INT_BOUNDS, MAX_ARRAY_LEN, MAX_STRING_CHARS


class _Fail(Exception):
    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def check_types(obj: object) -> None:
    """Raise CoordinatorError(INVALID_REQUEST) unless ``obj`` matches its annotations."""
    try:
        _check_dataclass(obj, type(obj).__name__)
    except _Fail as e:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"malformed field {e}") from None
    except RecursionError:
        raise CoordinatorError(Errors.INVALID_REQUEST, "request nested too deeply") from None


def _check_dataclass(obj: object, path: str) -> None:
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        _check(getattr(obj, f.name), _hints(type(obj))[f.name], f"{path}.{f.name}")


def _check(value: object, hint: Any, path: str) -> None:
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, width = get_args(hint)[0], get_args(hint)[1]
        _check(value, base, path)
        lo, hi = INT_BOUNDS[width]
        if not lo <= value <= hi:  # type: ignore[operator]
            raise _Fail(path, f"{value} is out of {width} range")
        return
    if origin in (typing.Union, types.UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return
        non_none = [o for o in options if o is not type(None)]
        if len(non_none) != 1:
            raise _Fail(path, "unsupported union")  # schema bug, not user input
        _check(value, non_none[0], path)
        return
    if origin is list:
        if not isinstance(value, list):
            raise _Fail(path, f"expected a list, got {type(value).__name__}")
        if len(value) > MAX_ARRAY_LEN:
            raise _Fail(path, f"more than {MAX_ARRAY_LEN} entries")
        (item,) = get_args(hint)
        for i, v in enumerate(value):
            _check(v, item, f"{path}[{i}]")
        return
    _check_scalar(value, hint, path)


def _check_scalar(value: object, hint: Any, path: str) -> None:
    if hint is bool:
        if not isinstance(value, bool):
            raise _Fail(path, f"expected a bool, got {type(value).__name__}")
    elif hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Fail(path, f"expected an int, got {type(value).__name__}")
    elif hint is str:
        if not isinstance(value, str):
            raise _Fail(path, f"expected a string, got {type(value).__name__}")
        if len(value) > MAX_STRING_CHARS:
            raise _Fail(path, f"longer than {MAX_STRING_CHARS} characters")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Fail(path, "not valid UTF-8 (a lone surrogate)") from None
    elif hint is bytes:
        if not isinstance(value, bytes):
            raise _Fail(path, f"expected bytes, got {type(value).__name__}")
    elif dataclasses.is_dataclass(hint):
        if type(value) is not hint:
            raise _Fail(path, f"expected {hint.__name__}, got {type(value).__name__}")
        _check_dataclass(value, path)
    else:
        raise _Fail(path, f"unsupported annotation {hint!r}")
