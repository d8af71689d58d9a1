"""Kafka's classic ``cooperative-sticky`` assignor: balanced, sticky, never double-owned.

Eager assignors make every member stop consuming on every rebalance. This one lets a
member keep what it owns across rebalances and hands a partition over in two steps, so
that no partition is ever owned by two members at once:

1. The leader computes a balanced, sticky target (:func:`sticky_assignment`, Kafka's
   ``AbstractStickyAssignor``) but leaves *out* every partition that would move from its
   current owner to another member. The owner sees the partition missing from its
   assignment, revokes it and rejoins.
2. In the next rebalance nobody owns it any more, so it is assigned at once.

Who owns a partition now (:func:`current_owners`) comes from the members' reported
``owned_partitions``: when several claim one, the highest ``generation_id`` wins (a member
that missed a rebalance reports stale ownership); a tie at the highest generation is
invalid input, so no claimant keeps the partition and it is withheld from everyone until
all of them have revoked it.

The target is balanced first, sticky second, and deterministic:

* **Balanced.** Member loads minimise the sum of squares given who may take what: no
  member can pass a partition, directly or along a chain of members each handing one on,
  to a member holding two or more fewer. Members with identical subscriptions therefore
  differ by at most one, and so does everyone when subscriptions are identical.
* **Sticky.** Every owned partition starts where it is. Free partitions (unowned, or
  owned by a member no longer subscribed) are dealt first, topics with the fewest
  subscribers first, each to the least loaded subscriber, then rebalanced *among
  themselves*; owned partitions move only if balance still needs it, the over-full
  member giving up its highest partition. So a group re-run on its own target changes
  nothing, a leaver's partitions spread without moving anyone else's, a joiner takes
  about ``1/n`` of the partitions, and the second cooperative round never moves what the
  first one kept.
* **Deterministic.** Ties go to the smaller member id, topics and members are taken in
  Java string order, so the input's dict order never matters.

Where this differs from Kafka's clients: Kafka's general (heterogeneous) algorithm stops
at *local* balance (no single partition can move to a member 2+ lighter), this one also
follows chains; Kafka's homogeneous fast path fills per-member quotas, which balances the
same but may pick other partitions to move; and Kafka may hand a partition claimed twice
in one generation to a third member at once, where this one waits for both claimants to
revoke it. The examples of Kafka's ``StickyAssignor`` javadoc come out as written there
(Kafka's quota fast path itself now answers its leave example differently).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator

from assignors.classic.spec import (
    ClassicSubscription,
    TopicPartition,
    assignable_topics,
    java_string_key,
)


def current_owners(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, ClassicSubscription]
) -> dict[TopicPartition, frozenset[str]]:
    """Per existing claimed partition, its claimants at the highest generation claiming it.

    One member: the partition's owner. Several: claimed twice in one generation, and all of
    them must revoke it before anyone else may take it. Claims on topics that are gone or
    partition numbers beyond a topic's size are dropped.
    """
    best: dict[TopicPartition, tuple[int, set[str]]] = {}
    for member_id, subscription in subscriptions.items():
        generation = subscription.generation_id
        for topic, partition in {(t, p) for t, p in subscription.owned_partitions}:
            if not 0 <= partition < partitions_per_topic.get(topic, 0):
                continue
            top = best.get((topic, partition))
            if top is None or generation > top[0]:
                best[(topic, partition)] = (generation, {member_id})
            elif generation == top[0]:
                top[1].add(member_id)
    return {tp: frozenset(members) for tp, (_, members) in best.items()}


def sticky_assignment(
    partitions_per_topic: dict[str, int], subscriptions: dict[str, ClassicSubscription]
) -> dict[str, list[tuple[str, int]]]:
    """The balanced, sticky target before the cooperative rule (what eager ``sticky`` gives).

    member_id -> sorted (topic, partition); every subscribed partition exactly once.
    """
    owners = current_owners(partitions_per_topic, subscriptions)
    return _StickyPlan(partitions_per_topic, subscriptions, owners).build()


class CooperativeStickyAssignor:
    """The sticky target minus the partitions that must first be revoked by their owner."""

    name = "cooperative-sticky"
    rebalance_protocol = "cooperative"

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, ClassicSubscription],
    ) -> dict[str, list[tuple[str, int]]]:
        owners = current_owners(partitions_per_topic, subscriptions)
        target = _StickyPlan(partitions_per_topic, subscriptions, owners).build()
        return {
            member_id: [tp for tp in tps if tp not in owners or owners[tp] == {member_id}]
            for member_id, tps in target.items()
        }


# -- the sticky target -------------------------------------------------------------------

Hop = tuple[str, str, str]  # (giver, topic, taker): one partition of topic passed on


class _StickyPlan:
    """One computation of :func:`sticky_assignment`: keep, deal, then rebalance by chains.

    ``held[m][t]`` are the partitions of topic ``t`` member ``m`` holds in the plan;
    ``fresh[m][t]`` the subset ``m`` did not own before (the ones cheapest to move again).
    """

    def __init__(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, ClassicSubscription],
        owners: dict[TopicPartition, frozenset[str]],
    ) -> None:
        self.sizes = partitions_per_topic
        self.members = sorted(subscriptions, key=java_string_key)
        self.rank = {m: i for i, m in enumerate(self.members)}
        self.topics_of = {m: assignable_topics(self.sizes, subscriptions[m]) for m in self.members}
        self.subscribers: dict[str, list[str]] = {}
        for m in self.members:
            for t in sorted(self.topics_of[m], key=java_string_key):
                self.subscribers.setdefault(t, []).append(m)
        self.held: dict[str, dict[str, set[int]]] = {m: {} for m in self.members}
        self.fresh: dict[str, dict[str, set[int]]] = {m: {} for m in self.members}
        self.count = dict.fromkeys(self.members, 0)
        self.kept_by: dict[TopicPartition, str] = {}
        for tp, holders in owners.items():
            holder = next(iter(holders))
            if len(holders) == 1 and tp[0] in self.topics_of[holder]:
                self.kept_by[tp] = holder
                self._give(tp, holder)

    def build(self) -> dict[str, list[tuple[str, int]]]:
        self._deal_free_partitions()
        self._rebalance(lambda m: self._topics_with(self.fresh[m]))
        self._rebalance(lambda m: self._topics_with(self.fresh[m], self.held[m]))
        result = {
            m: sorted((t, p) for t, ps in self.held[m].items() for p in ps) for m in self.members
        }
        expected = sum(self.sizes[t] for t in self.subscribers)
        if sum(len(tps) for tps in result.values()) != expected:
            raise AssertionError("sticky target must hold every subscribed partition once")
        return result

    # -- moving one partition ------------------------------------------------------------

    def _give(self, tp: TopicPartition, member: str) -> None:
        topic, partition = tp
        self.held[member].setdefault(topic, set()).add(partition)
        if self.kept_by.get(tp) != member:
            self.fresh[member].setdefault(topic, set()).add(partition)
        self.count[member] += 1

    def _take(self, tp: TopicPartition, member: str) -> None:
        topic, partition = tp
        self.held[member][topic].discard(partition)
        self.fresh[member].get(topic, set()).discard(partition)
        self.count[member] -= 1

    # -- step 1: deal the free partitions ------------------------------------------------

    def _deal_free_partitions(self) -> None:
        """Most constrained topics first, each partition to its least loaded subscriber."""
        heaps: dict[tuple[str, ...], list[tuple[int, int, str]]] = {}
        order = sorted(
            self.subscribers, key=lambda t: (len(self.subscribers[t]), java_string_key(t))
        )
        for topic in order:
            eligible = tuple(self.subscribers[topic])
            heap = heaps.get(eligible)
            if heap is None:
                heap = heaps[eligible] = [(self.count[m], self.rank[m], m) for m in eligible]
                heapq.heapify(heap)
            for partition in range(self.sizes[topic]):
                if (topic, partition) in self.kept_by:
                    continue
                member = self._least_loaded(heap)
                self._give((topic, partition), member)
                heapq.heapreplace(heap, (self.count[member], self.rank[member], member))

    def _least_loaded(self, heap: list[tuple[int, int, str]]) -> str:
        """The heap's least loaded member; entries whose load went stale are refreshed."""
        while True:
            load, rank, member = heap[0]
            if load == self.count[member]:
                return member
            heapq.heapreplace(heap, (self.count[member], rank, member))

    # -- steps 2 and 3: rebalance -------------------------------------------------------

    @staticmethod
    def _topics_with(*holdings: dict[str, set[int]]) -> list[str]:
        """Topics with partitions in the first holding, then the others' (Java order each)."""
        topics: list[str] = []
        for holding in holdings:
            extra = {t for t, ps in holding.items() if ps}.difference(topics)
            topics.extend(sorted(extra, key=java_string_key))
        return topics

    def _rebalance(self, movable_topics: Callable[[str], list[str]]) -> None:
        """Pass partitions on until no improving chain is left.

        ``movable_topics(m)``: the topics whose partitions ``m`` may pass on, preferred
        first. Each improvement lowers the sum of squared loads by at least 2, which bounds
        the loop.
        """
        budget = sum(c * c for c in self.count.values()) // 2
        for hops in self._improvements(movable_topics):
            budget -= 1
            if budget < 0:
                raise AssertionError("rebalancing must lower the sum of squared loads")
            for giver, topic, taker in hops:
                self._pass_on(giver, topic, taker)

    def _improvements(self, movable_topics: Callable[[str], list[str]]) -> Iterator[list[Hop]]:
        """Direct hand-overs do the bulk cheaply, chains finish the job.

        Lazy: the caller applies each improvement before the next one is looked for.
        """
        for hop in self._direct_moves(movable_topics):
            yield [hop]
        while (path := self._improving_path(movable_topics)) is not None:
            yield path

    def _pass_on(self, giver: str, topic: str, taker: str) -> None:
        """Move one partition of ``topic``: one ``giver`` did not own, else its highest."""
        partition = max(self.fresh[giver].get(topic) or self.held[giver][topic])
        self._take((topic, partition), giver)
        self._give((topic, partition), taker)

    def _direct_moves(self, movable_topics: Callable[[str], list[str]]) -> Iterator[Hop]:
        """Hand-overs from the most loaded member to the least loaded one that may take.

        Heap entries are ``(load, rank, member)``, refreshed lazily; a member whose load
        changed gets a fresh entry, so the first valid entry popped is the true extreme. A
        member that cannot hand over is dropped: the chain search catches what is left.
        """
        by_topic: dict[str, list[tuple[int, int, str]]] = {}
        for topic, members in self.subscribers.items():
            by_topic[topic] = [(self.count[m], self.rank[m], m) for m in members]
            heapq.heapify(by_topic[topic])
        givers = [(-self.count[m], self.rank[m], m) for m in self.members]
        heapq.heapify(givers)
        while givers:
            minus_load, rank, giver = heapq.heappop(givers)
            if -minus_load != self.count[giver]:
                continue
            best: tuple[int, int, str, str] | None = None
            for topic in movable_topics(giver):
                taker = self._least_loaded(by_topic[topic])
                if best is None or (self.count[taker], self.rank[taker]) < best[:2]:
                    best = (self.count[taker], self.rank[taker], topic, taker)
            if best is None or best[0] > self.count[giver] - 2:
                continue
            yield giver, best[2], best[3]
            for member in (giver, best[3]):
                heapq.heappush(givers, (-self.count[member], self.rank[member], member))
            for topic in self.topics_of[giver]:
                heapq.heappush(by_topic[topic], (self.count[giver], rank, giver))

    def _improving_path(self, movable_topics: Callable[[str], list[str]]) -> list[Hop] | None:
        """A chain from a member to one holding 2+ fewer partitions, or ``None``.

        One breadth-first search serves all members: sources enter by decreasing load, so
        the first time a member is reached it is from the most loaded member that can
        reach it. Each topic is expanded once (all its subscribers are reached at once).
        Among the members a load level reaches, the least loaded, then first reached, is
        the chain's end.
        """
        by_load = sorted(self.members, key=lambda m: (-self.count[m], self.rank[m]))
        lightest = min(self.count.values(), default=0)
        reached: set[str] = set()
        parent: dict[str, tuple[str, str]] = {}
        expanded: set[str] = set()
        i = 0
        while i < len(by_load) and self.count[by_load[i]] >= lightest + 2:
            load = self.count[by_load[i]]
            queue: deque[str] = deque()
            while i < len(by_load) and self.count[by_load[i]] == load:
                if by_load[i] not in reached:
                    reached.add(by_load[i])
                    queue.append(by_load[i])
                i += 1
            ends = []
            for end in self._search(queue, movable_topics, reached, parent, expanded, load - 2):
                ends.append(end)
                if self.count[end] == lightest:
                    break
            if ends:
                return self._path_to(min(ends, key=self.count.__getitem__), parent)
        return None

    def _search(
        self,
        queue: deque[str],
        movable_topics: Callable[[str], list[str]],
        reached: set[str],
        parent: dict[str, tuple[str, str]],
        expanded: set[str],
        max_end_load: int,
    ) -> Iterator[str]:
        """Drain ``queue`` breadth first; yield reached members loaded ``<= max_end_load``."""
        while queue:
            giver = queue.popleft()
            for topic in movable_topics(giver):
                if topic in expanded:
                    continue
                expanded.add(topic)
                for taker in self.subscribers[topic]:
                    if taker in reached:
                        continue
                    reached.add(taker)
                    parent[taker] = (giver, topic)
                    queue.append(taker)
                    if self.count[taker] <= max_end_load:
                        yield taker

    @staticmethod
    def _path_to(end: str, parent: dict[str, tuple[str, str]]) -> list[Hop]:
        path: list[Hop] = []
        while end in parent:
            giver, topic = parent[end]
            path.append((giver, topic, end))
            end = giver
        return path[::-1]
