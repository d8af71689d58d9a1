"""Topic regexes, compiled with RE2 only.

A subscription regex is user input evaluated inside the partition's event loop; Python's
backtracking ``re`` could be made to run for hours by one pattern and stall every group of the
partition. RE2 runs in linear time. Like Kafka (``Pattern.matcher(topic).matches()``), a topic
matches when the whole name matches.
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
# Bound on compiled patterns kept, so a stream of distinct patterns cannot grow memory.
CACHE_SIZE = 1024


class InvalidRegex(ValueError):
    pass


@functools.lru_cache(maxsize=CACHE_SIZE)
def compile_topic_regex(pattern: str):  # -> re2._Regexp, untyped upstream
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = (
            e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
        )
        raise InvalidRegex(f"invalid regular expression {pattern!r}: {detail}") from None


def matching_topics(pattern: str, topic_names: list[str]) -> list[str]:
    rx = compile_topic_regex(pattern)
    return sorted(t for t in topic_names if rx.fullmatch(t) is not None)
