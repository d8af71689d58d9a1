"""The ``range`` assignor for small groups, in plain Python: the same answer, without numpy.

Why it exists: at a hundred members numpy's fixed cost per call (a few microseconds, and
the vectorised path makes some sixty calls) is most of an assignment; Kafka's JMH grid times
range at 100 members x 100 topics in 52 microseconds. Here the work is per member and per
*partition number of a class* (a co-partitioned class of topics shares its numbers, see
``range``), never per partition, so a class of a hundred topics costs what one topic does.

It handles the input the assignor itself produces and nothing else: no rack information on
any topic, and every member's current assignment *class-aligned*: for each class it holds
anything of, it holds the same non-empty frozenset of in-range numbers on every topic of the
class, and it is subscribed to that class. That is what ``range`` hands out, so a running
group stays on this path; anything else (stale, partial or foreign assignments, racks,
negative sizes) returns ``None`` and the vectorised path decides, which is also the
reference this path must equal (a Hypothesis property checks both, including which members
get their own mapping back).
"""

from __future__ import annotations

from itertools import compress, islice
from operator import attrgetter, not_

from assignors.spec import AssignmentSpec, GroupAssignment, MemberSpec

# Above these the vectorised path is faster (measured at 100-500 members x 10-100 topics:
# past ~200 members the per-member and per-number Python here overtakes numpy's fixed cost).
MAX_MEMBERS = 200
MAX_TOPICS = 1_000

_subscription = attrgetter("subscribed_topic_ids")
_assigned = attrgetter("assigned_partitions")
_racks = attrgetter("partition_racks")
_size = attrgetter("num_partitions")


class _Class:
    """One co-partitioned class: topics of one size with the same subscribers."""

    __slots__ = ("_position", "claims", "size", "subscribers", "topic_ids", "topic_set")

    def __init__(self, size: int, subscribers: list[int] | range) -> None:
        self.topic_ids: list[str] = []
        self.size = size
        self.subscribers = subscribers  # member indices, ascending
        self._position: dict[int, int] | None = None
        self.claims: dict[int, int] = {}  # partition number -> its holder's position
        self.topic_set: frozenset[str] = frozenset()

    def position(self, member: int) -> int | None:
        """The member's position among the subscribers, or ``None`` if it is not one."""
        if type(self.subscribers) is range:  # everyone: position = member index
            return member
        if self._position is None:
            self._position = {m: p for p, m in enumerate(self.subscribers)}
        return self._position.get(member)


def eligible(spec: AssignmentSpec) -> bool:
    """Small enough for this path to be the faster one."""
    return len(spec.members) <= MAX_MEMBERS and len(spec.topics) <= MAX_TOPICS


def assign_small(spec: AssignmentSpec) -> GroupAssignment | None:
    """The range assignment of ``spec``, or ``None`` when the input is not the kind this path
    handles (see the module docstring); then the vectorised path must answer."""
    member_ids = sorted(spec.members)
    members: list[MemberSpec] = list(map(spec.members.__getitem__, member_ids))
    topics = spec.topics
    if not members:
        return GroupAssignment(members={})
    if list(map(_racks, topics.values())).count(None) != len(topics):
        return None
    classes = _classes(members, topics)
    if classes is None:
        return None
    class_of: dict[str, _Class] = {}
    for c in classes:
        class_of.update(dict.fromkeys(c.topic_ids, c))
    reusable = _read_claims(members, classes, class_of)
    if reusable is None:
        return None
    result: dict = dict(zip(member_ids, map(_assigned, members), strict=True))
    changed = set(compress(range(len(members)), map(not_, reusable)))
    decided = []
    for c in classes:
        new = _sticky_quota_fill(c)
        decided.append(new)
        changed.update(_moved(c, new))
    for i in changed:
        result[member_ids[i]] = {}
    for c, new in zip(classes, decided, strict=True):
        topic_ids = dict.fromkeys(c.topic_ids)  # fromkeys copies a dict's keys fastest
        for position, numbers in sorted(_by_holder(new).items()):
            i = c.subscribers[position]
            if i in changed:
                mid = member_ids[i]
                given = dict.fromkeys(topic_ids, frozenset(numbers))
                if result[mid]:
                    result[mid].update(given)
                else:
                    result[mid] = given
    return GroupAssignment(members=result)


def _classes(members: list[MemberSpec], topics) -> list[_Class] | None:
    """The co-partitioned classes, in order of their first topic id; ``None`` if a topic's
    size is negative (the vectorised path raises the error) or a subscription is not a
    frozenset."""
    subscriptions = list(map(_subscription, members))
    first = subscriptions[0]
    if subscriptions.count(first) == len(subscriptions):  # identity first: C speed
        if type(first) is not frozenset:
            return None
        topic_ids = sorted(filter(topics.__contains__, first))
        return _by_size(topic_ids, topics, range(len(members)))
    if set(map(type, subscriptions)) != {frozenset}:
        return None
    groups: dict[frozenset[str], list[int]] = {}
    for i, subscription in enumerate(subscriptions):
        groups.setdefault(subscription, []).append(i)
    topic_groups: dict[str, list[int]] = {}
    for g, subscription in enumerate(groups):
        for t in filter(topics.__contains__, subscription):
            topic_groups.setdefault(t, []).append(g)
    member_lists = list(groups.values())
    by_key: dict[tuple, _Class] = {}
    subscribers_of: dict[tuple[int, ...], list[int]] = {}
    for t in sorted(topic_groups):
        size = topics[t].num_partitions
        if size < 0:
            return None
        key = tuple(topic_groups[t])
        subscribers = subscribers_of.get(key)
        if subscribers is None:
            subscribers = subscribers_of[key] = (
                sorted(i for g in key for i in member_lists[g])
                if len(key) > 1 else member_lists[key[0]]
            )
        c = by_key.get((size, key))
        if c is None:
            c = by_key[(size, key)] = _Class(size, subscribers)
        c.topic_ids.append(t)
    for c in by_key.values():
        c.topic_set = frozenset(c.topic_ids)
    return list(by_key.values())


def _by_size(topic_ids: list[str], topics, subscribers: range) -> list[_Class] | None:
    """Classes of topics that everyone subscribes to: one per partition count."""
    sizes = list(map(_size, map(topics.__getitem__, topic_ids)))
    if not sizes:
        return []
    if min(sizes) < 0:
        return None
    if sizes.count(sizes[0]) == len(sizes):
        c = _Class(sizes[0], subscribers)
        c.topic_ids = topic_ids
        c.topic_set = frozenset(topic_ids)
        return [c]
    by_size: dict[int, _Class] = {}
    for t, size in zip(topic_ids, sizes, strict=True):
        c = by_size.get(size)
        if c is None:
            c = by_size[size] = _Class(size, subscribers)
        c.topic_ids.append(t)
    for c in by_size.values():
        c.topic_set = frozenset(c.topic_ids)
    return list(by_size.values())


def _read_claims(
    members: list[MemberSpec], classes: list[_Class], class_of: dict[str, _Class]
) -> list[bool] | None:
    """Record each member's class-aligned holdings in its classes (``_Class.claims``; a
    number two members claim stays with the first in member-id order, as in
    ``GroupLayout.current_owners``); returns per member whether it may get its mapping back,
    or ``None`` when some holding is not class-aligned."""
    reusable = [True] * len(members)
    for i, member in enumerate(members):
        mapping = member.assigned_partitions
        if not mapping:
            continue
        shared = member.shared_assignment  # cached with the spec
        if shared is not None:
            held, topic_set = shared
            c = class_of.get(next(iter(topic_set)))
            if c is None or topic_set != c.topic_set:
                return None
            holdings = [(c, held)]
        else:
            holdings = _holdings(mapping, class_of)
            if holdings is None:
                return None
        for c, numbers in holdings:
            position = c.position(i)
            if (
                position is None
                or type(numbers) is not frozenset
                or not numbers
                or min(numbers) < 0
                or max(numbers) >= c.size
            ):
                return None
            claims = c.claims
            if claims.keys().isdisjoint(numbers):
                claims.update(dict.fromkeys(numbers, position))
                continue
            reusable[i] = False
            for n in numbers:
                claims.setdefault(n, position)
    return reusable


def _holdings(
    mapping, class_of: dict[str, _Class]
) -> list[tuple[_Class, frozenset[int]]] | None:
    """A member's holdings per class, when each class it touches has one value on all its
    topics; else ``None``."""
    per_class: dict[int, list] = {}
    for t, numbers in mapping.items():
        c = class_of.get(t)
        if c is None or type(numbers) is not frozenset:
            return None
        entry = per_class.get(id(c))
        if entry is None:
            per_class[id(c)] = [c, numbers, 1]
        elif entry[1] is not numbers and entry[1] != numbers:
            return None
        else:
            entry[2] += 1
    if any(count != len(c.topic_ids) for c, _, count in per_class.values()):
        return None
    return [(c, numbers) for c, numbers, _ in per_class.values()]


def _sticky_quota_fill(c: _Class) -> dict[int, int]:
    """``uniform.sticky_quota_fill`` over one class's numbers, without racks: number ->
    new holder position."""
    k = len(c.subscribers)
    min_quota, extra = divmod(c.size, k)
    held: dict[int, list[int]] = {}
    for n in sorted(c.claims):
        held.setdefault(c.claims[n], []).append(n)
    over = sorted(p for p, ns in held.items() if len(ns) > min_quota)[:extra]
    limit = dict.fromkeys(over, min_quota + 1)
    target = dict(limit)
    spare = extra - len(over)
    if spare:
        for p in islice((p for p in range(k) if p not in limit), spare):
            target[p] = min_quota + 1
    owner: dict[int, int] = {}
    for p, ns in held.items():
        owner.update(dict.fromkeys(ns[: limit.get(p, min_quota)], p))
    free = (n for n in range(c.size) if n not in owner)
    # With a quota of 0 only the members given an extra number may receive one.
    receivers = range(k) if min_quota else sorted(target)
    for p in receivers:
        need = target.get(p, min_quota) - min(len(held.get(p, ())), limit.get(p, min_quota))
        if need > 0:
            owner.update(dict.fromkeys(islice(free, need), p))
    return owner


def _by_holder(owner: dict[int, int]) -> dict[int, list[int]]:
    """Holder position -> its numbers, ascending."""
    out: dict[int, list[int]] = {}
    for n in sorted(owner):
        out.setdefault(owner[n], []).append(n)
    return out


def _moved(c: _Class, new: dict[int, int]) -> set[int]:
    """Members (indices) that gained or lost a number of ``c``."""
    if new == c.claims:
        return set()
    old = c.claims
    positions = {p for n, p in new.items() if old.get(n) != p}
    positions |= {p for n, p in old.items() if new.get(n) != p}
    return {c.subscribers[p] for p in positions}
