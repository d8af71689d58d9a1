"""Java's orders, where Kafka's choices hang on them: ``String.hashCode``, the order a
``java.util.HashMap`` iterates its keys in, and ``java.util.PriorityQueue``'s binary heap.

Kafka's streams sticky assignor breaks ties between equally loaded processes by the order its
``PriorityQueue`` polls them, which depends on the order they were added in, which is the order a
``HashMap`` keyed by process id iterates. A Python heap of ``(load, id)`` breaks the same ties by
id, so Cohort and Kafka would hand the same group different tasks. These model the Java classes
exactly enough for that: hash buckets and table growth as ``HashMap`` computes them (entries of
one bucket in insertion order; no tree bins, which need eight keys in one bucket), and
``PriorityQueue``'s sift-up and sift-down, which keep ties where Python's ``heapq`` moves them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

_INT32_MASK = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _INT32_MASK
    return h - (1 << 32) if h & 0x80000000 else h


def _spread(h: int) -> int:
    """``HashMap.hash``: the hash's high half folded into its low half."""
    h &= _INT32_MASK
    return h ^ (h >> 16)


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return n


def hash_map_order(keys: Iterable[str], initial_capacity: int | None = None,
                   compute_if_absent: bool = False) -> list[str]:
    """The order a ``HashMap<String, ?>`` iterates its keys after one ``put`` (or, with
    ``compute_if_absent``, one ``computeIfAbsent``) per key of ``keys``, in that order, into
    ``new HashMap<>()`` (``initial_capacity`` None) or ``new HashMap<>(initial_capacity)``.

    The two differ: ``put`` appends a key to its bucket's chain and grows the table right after
    the insert that passes the threshold; ``computeIfAbsent`` prepends it and grows the table at
    the start of the next call (one for a key already there too). A growth splits each chain
    keeping its order."""
    threshold = 0 if initial_capacity is None else _table_size_for(max(initial_capacity, 0))
    table: list[list[str]] = []
    present: set[str] = set()
    spread: dict[str, int] = {}  # each key's spread hash, computed once

    def bucket(key: str, capacity: int) -> int:
        h = spread.get(key)
        if h is None:
            h = spread[key] = _spread(java_string_hash(key))
        return h & (capacity - 1)

    def resize() -> None:
        nonlocal table, threshold
        old = len(table)
        if old == 0:
            capacity = threshold if threshold > 0 else _DEFAULT_CAPACITY
            threshold = int(capacity * _LOAD_FACTOR)
        else:
            capacity = old << 1
            threshold = threshold << 1 if old >= _DEFAULT_CAPACITY \
                else int(capacity * _LOAD_FACTOR)
        grown: list[list[str]] = [[] for _ in range(capacity)]
        for chain in table:
            for key in chain:
                grown[bucket(key, capacity)].append(key)
        table = grown

    for key in keys:
        if compute_if_absent and (len(present) > threshold or not table):
            resize()
        if key in present:
            continue
        if not table:
            resize()
        chain = table[bucket(key, len(table))]
        if compute_if_absent:
            chain.insert(0, key)
        else:
            chain.append(key)
        present.add(key)
        if not compute_if_absent and len(present) > threshold:
            resize()
    return [key for chain in table for key in chain]


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator given as a key (smaller first): ``add``
    sifts up while strictly smaller than the parent; ``poll`` moves the last element to the root
    and sifts it down while strictly greater than the smaller child (the left one on a tie)."""

    __slots__ = ("_heap", "_key")

    def __init__(self, key: Callable[[T], object], items: Iterable[T] = ()) -> None:
        self._key = key
        self._heap: list[T] = []
        for item in items:  # PriorityQueue.addAll: one add each, in order
            self.add(item)

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, item: T) -> None:
        heap, key = self._heap, self._key
        k = len(heap)
        heap.append(item)
        kk = key(item)
        while k > 0:
            parent = (k - 1) >> 1
            if not kk < key(heap[parent]):
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = item

    def poll(self) -> T | None:
        heap, key = self._heap, self._key
        if not heap:
            return None
        result = heap[0]
        last = heap.pop()
        n = len(heap)
        if n:
            k, half, kl = 0, n >> 1, key(last)
            while k < half:
                child = 2 * k + 1
                c = heap[child]
                right = child + 1
                if right < n and key(c) > key(heap[right]):
                    child = right
                    c = heap[child]
                if not kl > key(c):
                    break
                heap[k] = c
                k = child
            heap[k] = last
        return result
