"""Type-level validation of decoded requests, driven by the dataclass annotations.

A request reaches the shard as Python objects that anybody could have built: a Ray client can
send a string where an int32 belongs, a list of ten million entries, or a nested struct of the
wrong class. The rules in the group modules assume well-typed input, so every request passes
through ``check_types`` first; a violation becomes INVALID_REQUEST with the offending path in
the message, and nothing else runs.

Types are matched exactly (``type(v) is str``, not ``isinstance``): a subclass of ``str`` or
``int`` can redefine hashing and comparison, and the rules use ids as dictionary keys, so a
subclass could make a rule raise halfway through a change. ``routing_error`` is the part of
the check the runtime needs before it may even hash a request's group ids to route it.

One check, not two: a request the Kafka wire codec and its row's ``decode`` built in this
process is well typed by construction (``tests/gateway/test_one_validation.py`` proves it for
every version of every API), so its caller may vouch for it: the shard runs its handler
between ``vouch(request)`` and ``end_vouch``, and ``check_types`` passes that one object
without walking it. What is vouched for is an object's identity, held by the in-process
caller for the length of one handler: nothing a request carries (no attribute, no type, no
value) can make it vouched, so a request that came over Ray, pickled by anybody, is checked.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, get_args, get_origin

from protocol.errors import CoordinatorError, Errors
from protocol.types import (
    INT_BOUNDS,
    MAX_ARRAY_LEN,
    MAX_REQUEST_ENTRIES,
    MAX_STRING_BYTES,
    MAX_STRING_CHARS,
)


class _Fail(Exception):
    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


# The request whose handler is running, when its caller vouched for it (``vouch``).
_NOBODY = object()
_VOUCHED: ContextVar[object] = ContextVar("vouched_request", default=_NOBODY)


def vouch(request: object) -> Token:
    """From now until ``end_vouch(token)``, ``check_types(request)`` passes at once (that
    object only, by identity): for a request whose caller guarantees it well typed (see the
    module docstring). Each thread and asyncio task sees its own."""
    return _VOUCHED.set(request)


def end_vouch(token: Token) -> None:
    _VOUCHED.reset(token)


def check_types(obj: object) -> None:
    """Raise CoordinatorError(INVALID_REQUEST) unless ``obj`` matches its annotations and
    holds at most ``MAX_REQUEST_ENTRIES`` list entries in all; at once for the request
    vouched for (``vouch``)."""
    if obj is _VOUCHED.get():
        return
    try:
        _check_dataclass(obj, type(obj).__name__, _Budget())
    except _Fail as e:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"malformed field {e}") from None
    except RecursionError:
        raise CoordinatorError(Errors.INVALID_REQUEST, "request nested too deeply") from None


def string_error(value: object) -> str | None:
    """Why ``value`` is not a string field Kafka could carry, or None."""
    if type(value) is not str:
        return f"expected a string, got {type(value).__name__}"
    if len(value) > MAX_STRING_CHARS:
        return f"longer than {MAX_STRING_BYTES} bytes"
    if not value.isascii():
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            return "not valid UTF-8 (a lone surrogate)"
        if size > MAX_STRING_BYTES:
            return f"longer than {MAX_STRING_BYTES} bytes"
    return None


def routing_error(request: object, group_ids_field: str | None, per_group: bool) -> str | None:
    """What makes ``request``'s group ids unfit to route by (hashing a megabyte-long id is
    work a partition should not do for a request it refuses anyway), or None. The caller
    says where the ids are: a field naming one group, or a list of them (``per_group``)."""
    if group_ids_field is None:
        return None
    ids = getattr(request, group_ids_field, None)
    if not per_group:
        ids = [ids]
    elif type(ids) is not list:
        return f"{group_ids_field}: expected a list, got {type(ids).__name__}"
    elif len(ids) > MAX_ARRAY_LEN:
        return f"{group_ids_field}: more than {MAX_ARRAY_LEN} entries"
    for group_id in ids:
        why = string_error(group_id)
        if why is not None:
            return f"{group_ids_field}: {why}"
    return None


class _Budget:
    """The list entries a request may still hold (``MAX_REQUEST_ENTRIES`` in all)."""

    def __init__(self) -> None:
        self.left = MAX_REQUEST_ENTRIES

    def take(self, n: int, path: str) -> None:
        self.left -= n
        if self.left < 0:
            raise _Fail(path, f"the request holds more than {MAX_REQUEST_ENTRIES} entries")


def _check_dataclass(obj: object, path: str, budget: _Budget) -> None:
    for name, hint, fast in _plan(type(obj)):
        value = getattr(obj, name)
        if fast is None or not fast(value):
            _check(value, hint, f"{path}.{name}", budget)


@functools.cache
def _plan(cls: type) -> tuple[tuple[str, Any, Callable[[object], bool] | None], ...]:
    """Per field of ``cls``: its name, its annotation, and a quick test that, when true,
    means ``_check`` would pass (scalars: a heartbeat's dozen fields cost a few type tests,
    not a walk through ``typing``); lists, structs and anything the test doubts take
    ``_check``, which also names what is wrong."""
    hints = _hints(cls)
    return tuple((f.name, hints[f.name], _quick(hints[f.name])) for f in dataclasses.fields(cls))


def _quick(hint: Any) -> Callable[[object], bool] | None:
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, width = get_args(hint)[:2]
        if base is not int:
            return None
        lo, hi = INT_BOUNDS[width]
        return lambda v: type(v) is int and lo <= v <= hi
    if origin in (typing.Union, types.UnionType):
        non_none = [o for o in get_args(hint) if o is not type(None)]
        inner = _quick(non_none[0]) if len(non_none) == 1 else None
        if inner is None:
            return None
        return lambda v: v is None or inner(v)
    if hint is str:
        return lambda v: type(v) is str and len(v) <= MAX_STRING_CHARS and v.isascii()
    if hint in (bool, int, bytes):
        return lambda v: type(v) is hint
    return None


def _check(value: object, hint: Any, path: str, budget: _Budget) -> None:
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, width = get_args(hint)[0], get_args(hint)[1]
        _check(value, base, path, budget)
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
        _check(value, non_none[0], path, budget)
        return
    if origin in (list, tuple):  # list[X], or tuple[X, ...] (a hashable value's arrays)
        if type(value) is not origin:
            raise _Fail(path, f"expected a {origin.__name__}, got {type(value).__name__}")
        if len(value) > MAX_ARRAY_LEN:
            raise _Fail(path, f"more than {MAX_ARRAY_LEN} entries")
        budget.take(len(value), path)
        item = get_args(hint)[0]
        if _plain_ints_in_range(value, item):
            return  # partition lists: thousands of entries a heartbeat, checked in bulk
        for i, v in enumerate(value):
            _check(v, item, f"{path}[{i}]", budget)
        return
    _check_scalar(value, hint, path, budget)


def _plain_ints_in_range(values: list, hint: Any) -> bool:
    """True when ``hint`` is a bounded int and every value a plain int within its bounds: the
    element-wise check would pass. Anything else (an ``Errors``, a bool, a bad value) takes
    the element-wise path, which names the offending entry."""
    if not values or get_origin(hint) is not typing.Annotated:
        return False
    base, width = get_args(hint)[:2]
    if base is not int or set(map(type, values)) != {int}:
        return False
    lo, hi = INT_BOUNDS[width]
    return lo <= min(values) and max(values) <= hi


def _check_scalar(value: object, hint: Any, path: str, budget: _Budget) -> None:
    if hint is bool:
        if type(value) is not bool:
            raise _Fail(path, f"expected a bool, got {type(value).__name__}")
    elif hint is int:
        if type(value) is not int and not _is_int_enum(value):
            raise _Fail(path, f"expected an int, got {type(value).__name__}")
    elif hint is str:
        why = string_error(value)
        if why is not None:
            raise _Fail(path, why)
    elif hint is bytes:
        if type(value) is not bytes:
            raise _Fail(path, f"expected bytes, got {type(value).__name__}")
    elif dataclasses.is_dataclass(hint):
        if type(value) is not hint:
            raise _Fail(path, f"expected {hint.__name__}, got {type(value).__name__}")
        _check_dataclass(value, path, budget)
    else:
        raise _Fail(path, f"unsupported annotation {hint!r}")


def _is_int_enum(value: object) -> bool:
    """Cohort's own ``Errors`` (an IntEnum whose hashing and ordering are int's) is accepted
    where an int belongs: its own clients put error codes in requests that way."""
    return type(value) is Errors
