"""A classic (JoinGroup/SyncGroup) group: members, generation, and the rebalance in flight.

Unlike a KIP-848 group, a classic group is mostly transient: which members have sent their
JoinGroup, whose SyncGroup waits for the leader. Only the generation and its membership are
persisted, as one ``GroupMetadataValue`` (seed 003), written when a generation starts and again
when the leader hands in its assignment. ``replay`` applies such a record: to a live group it
only restates what the group already holds (the transient parts stay), and a group built by
``replay`` alone is a group a new coordinator loaded, which must redo what was in flight.

The states and their valid moves are in ``states``; the rules that make the moves live in
the other modules of this package.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from protocol import messages as m
from protocol.classic.records import GroupMemberMetadata, GroupMetadataValue
from protocol.classic.states import ClassicGroupState, check_transition, parse_state
from protocol.records import ClassicProtocol, TopicMetadataEntry

EMPTY = ClassicGroupState.EMPTY
PREPARING_REBALANCE = ClassicGroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = ClassicGroupState.COMPLETING_REBALANCE
STABLE = ClassicGroupState.STABLE
DEAD = ClassicGroupState.DEAD
STATES = tuple(ClassicGroupState)

# KIP-800's join reasons.
RESTART = "restart"
TOPIC_METADATA_CHANGE = "topic_metadata_change"
UPGRADE = "upgrade"
JOIN_REASONS = (RESTART, TOPIC_METADATA_CHANGE, UPGRADE)


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata), in the member's preference order
    assignment: bytes = b""
    # Transient: the JoinGroup / SyncGroup this member waits on, answered when the phase ends.
    awaiting_join: m.JoinGroupRequest | None = None
    awaiting_sync: m.SyncGroupRequest | None = None
    is_new: bool = False  # joined during this rebalance (Kafka's new-member timeout)

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass
class ClassicGroup:
    group_id: str
    state: ClassicGroupState = EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    state_timestamp_ms: int = 0
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    # Member ids handed out with MEMBER_ID_REQUIRED whose JoinGroup has not arrived yet.
    pending_members: set[str] = field(default_factory=set)
    # The subscribed topics' metadata as of the current generation (seed 003, point 1).
    topics: tuple[TopicMetadataEntry, ...] = ()
    # Built by replay alone: a new coordinator took over this group (seed 003).
    loaded: bool = False
    # An empty group's first rebalance waits group.initial.rebalance.delay.ms for more members.
    initial_delay: bool = False
    initial_delay_remaining_ms: int = 0
    new_member_added: bool = False

    group_type = "classic"

    # --- views -----------------------------------------------------------------------------

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    @property
    def awaiting_join_count(self) -> int:
        return sum(1 for mem in self.members.values() if mem.awaiting_join is not None)

    def all_joined(self) -> bool:
        return self.awaiting_join_count == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members: how long a join phase may last."""
        return max((mem.rebalance_timeout_ms for mem in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in mem.protocols} for mem in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Kafka's rule: a joiner must share the group's protocol type and one protocol with
        every member (an empty group accepts any non-empty list)."""
        names = {name for name, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for its favourite protocol that everyone supports; most votes
        win (ties by name, so the choice is deterministic)."""
        candidates = self.candidate_protocols()
        votes = Counter(mem.vote(candidates) for mem in self.members.values())
        return min(votes, key=lambda name: (-votes[name], name))

    def member_by_instance(self, instance_id: str) -> ClassicMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    # --- changes ---------------------------------------------------------------------------

    def transition_to(self, state: ClassicGroupState, now_ms: int) -> None:
        """Move to ``state`` (checked against the table of valid moves) as of ``now_ms``."""
        check_transition(self.group_id, self.state, state)
        self.state = state
        self.state_timestamp_ms = now_ms

    def add(self, member: ClassicMember) -> None:
        if not self.members:  # an empty group takes its first joiner's protocol type
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> ClassicMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            # Prefer a member already waiting in the join phase: it can lead at once.
            waiting = [mid for mid, mem in self.members.items() if mem.awaiting_join is not None]
            self.leader_id = (waiting or list(self.members) or [None])[0]
        # An empty group keeps its protocol type (Kafka's describe and list still show it)
        # until its next first joiner brings one.
        return member

    def replace_static(self, old_id: str, new_id: str) -> ClassicMember:
        """A static member back under a new member id takes the old one's place."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    # --- records ---------------------------------------------------------------------------

    def to_record(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol_name=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=self.state_timestamp_ms,
            members=tuple(
                GroupMemberMetadata(
                    member_id=mem.member_id,
                    group_instance_id=mem.group_instance_id,
                    client_id=mem.client_id,
                    client_host=mem.client_host,
                    rebalance_timeout_ms=mem.rebalance_timeout_ms,
                    session_timeout_ms=mem.session_timeout_ms,
                    subscription=mem.metadata_for(self.protocol_name),
                    assignment=mem.assignment,
                    protocols=tuple(ClassicProtocol(n, md) for n, md in mem.protocols),
                )
                for mem in self.members.values()
            ),
            state=self.state.value,
            topics=self.topics,
        )

    def replay(self, value: GroupMetadataValue) -> None:
        """Take the persisted generation; members keep what only live memory holds."""
        old = self.members
        self.members, self.static_members = {}, {}
        self.generation_id = value.generation
        self.protocol_type = value.protocol_type or None
        self.protocol_name = value.protocol_name
        self.leader_id = value.leader
        self.state = parse_state(value.state) or STABLE
        self.state_timestamp_ms = value.current_state_timestamp
        self.topics = value.topics
        for meta in value.members:
            live = old.get(meta.member_id)
            # The record holds the chosen protocol's metadata: it wins over what memory had.
            chosen = (value.protocol_name or "", meta.subscription)
            known = [(p.name, p.metadata) for p in meta.protocols] or [chosen]
            protocols = [chosen if n == chosen[0] else (n, md) for n, md in known]
            if chosen[0] not in {n for n, _ in known} and value.protocol_name is not None:
                protocols.append(chosen)
            member = ClassicMember(
                member_id=meta.member_id,
                group_instance_id=meta.group_instance_id,
                client_id=meta.client_id,
                client_host=meta.client_host,
                rebalance_timeout_ms=meta.rebalance_timeout_ms,
                session_timeout_ms=meta.session_timeout_ms,
                protocol_type=value.protocol_type,
                protocols=protocols,
                assignment=meta.assignment,
            )
            if live is not None:
                member.awaiting_join, member.awaiting_sync = live.awaiting_join, live.awaiting_sync
                member.is_new = live.is_new
            self.members[member.member_id] = member
            if member.group_instance_id is not None:
                self.static_members[member.group_instance_id] = member.member_id
