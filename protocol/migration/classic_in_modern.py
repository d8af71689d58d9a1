"""Classic members living inside a modern (KIP-848-style) group, for every group type.

After an online upgrade (seed 002 for consumers, seed 004 for Kafka Connect) a converted group
keeps hosting the members that still speak the classic protocol until they too restart. A
classic member cannot be told "revoke these, then take those" the way a new-protocol member
is; all it understands is "rebalance" and a SyncGroup assignment. So the coordinator runs the
new protocol for it:

- its JoinGroup is its full heartbeat: what it reports holding is also its revocation
  acknowledgement; the group's target decides and the type's reconciler moves it one safe step
  (revoke before assign); everyone is a follower (the leader is ""): the coordinator assigns;
- its generation is its member epoch; SyncGroup hands it what it now holds, in its classic
  protocol's bytes;
- its Heartbeat answers REBALANCE_IN_PROGRESS while the reconciler has a next step for it;
- its LeaveGroup fences it as any member leaving; when only classic members are left the group
  converts back (``conversion_driver``), and the classic rules answer the rest of the request.

``ClassicMembersOfModernGroup`` holds all of that once; ``classic_members`` (consumers) and
``connect_classic_members`` (Connect workers) name what is their own: how a JoinGroup is read
and admitted, which reconciler and records, and what SyncGroup's bytes say. What it keeps in
memory (member ids handed out with MEMBER_ID_REQUIRED, and each member's last JoinGroup until
its SyncGroup) is not persisted, as a classic group's pending members and sync phase are not;
the ids handed out expire after one session timeout, so that map stays bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import ClassicMemberMetadata, ClassicProtocol, Record


class ModernMember(Protocol):
    """What these rules read of a modern group's member."""

    member_id: str
    member_epoch: int
    metadata: Any  # its metadata record's value (``classic_member_metadata`` set if classic)
    current: Any  # its current-assignment record's value


class ModernGroup(Protocol):
    """What these rules read of a modern group (``ConsumerGroup``, ``ConnectGroup``)."""

    group_id: str
    group_type: str
    members: dict[str, Any]
    static_members: dict[str, str]
    assignment_epoch: int

    def target_of(self, member_id: str) -> Any: ...
    def owner_of(self, *unit: Any) -> str | None: ...


G = TypeVar("G", bound=ModernGroup)
M = TypeVar("M", bound=ModernMember)


@dataclass(frozen=True)
class Joined:
    """What a classic member's last JoinGroup said, kept for its SyncGroup."""

    owned: Any  # what it reported holding (None: unknown), in the group's units
    protocol_name: str
    config_offset: int = -1  # Connect's config offset; unused by consumers


@dataclass(frozen=True)
class Steps:
    """How a group type moves a member's assignment one step: its reconciler, what a member
    was given, and the record key its current assignment is written under."""

    reconcile: Callable[..., Any]  # (member, epoch, target, owned, owner_of) -> member
    assigned: Callable[[Any], Any]  # member -> its assignment, in the group's units
    current_key: type


@dataclass(frozen=True)
class Ports:
    """What these rules ask of the group type's own rules and of its conversion."""

    touch: Callable[[str, str], None]  # (group id, member id): its session starts again
    fence: Callable[..., None]  # (group, member id, reason): it is gone, the group bumps
    finish_turn: Callable[[], None]  # settle the turn's epoch bump and target
    maybe_downgrade: Callable[[Any], bool]  # only classic members left: back to classic


def classic_metadata_of(req: m.JoinGroupRequest) -> ClassicMemberMetadata:
    """What a member record keeps of a classic JoinGroup: its session and its protocols."""
    return ClassicMemberMetadata(
        session_timeout_ms=req.session_timeout_ms,
        supported_protocols=tuple(ClassicProtocol(p.name, p.metadata) for p in req.protocols),
    )


def rebalance_timeout_of(req: m.JoinGroupRequest) -> int:
    """A JoinGroup's rebalance timeout (-1, before v1: the session timeout)."""
    return req.session_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms


class ClassicMembersOfModernGroup(Generic[G, M]):
    """Classic JoinGroup, SyncGroup, Heartbeat and LeaveGroup addressed to a modern group.

    Hooks (class attributes): ``protocol_type``, ``group_type`` (the modern group's
    ``group_type``), ``noun`` ("member", "worker"), ``rebalance_message`` and ``steps``
    (``Steps``: how its assignment moves). Hooks (methods): ``read_join``, ``admit``,
    ``sync_assignment`` and ``ports`` (``Ports``: what it asks of the type's rules).
    """

    protocol_type: str
    group_type: str
    noun: str
    rebalance_message: str
    steps: Steps

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        # (group, member) that got a JoinGroup reply and owe a SyncGroup.
        self._joined: dict[tuple[str, str], Joined] = {}
        # (group, member id) handed out with MEMBER_ID_REQUIRED -> good until (ms).
        self._issued: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: G, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None:
        gid = group.group_id
        if req.protocol_type != self.protocol_type:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {gid} is a {self.group_type} group: protocol type must be "
                f"{self.protocol_type!r}.",
            )
        joined = self.read_join(group, req)
        if not req.member_id and req.group_instance_id is None:
            return self._member_id_required(group, req)
        member_id = self.admit(group, req)
        self._issued.pop((gid, member_id), None)
        if self.ports().maybe_downgrade(group):
            # It replaced the last new-protocol member: the group is classic again, and this
            # JoinGroup is one more member rejoining it.
            return self.ctx.classic.join(req)
        self.ports().finish_turn()
        group = self.ctx.groups[gid]
        member = self._step(group, group.members[member_id], joined.owned)
        self._joined[(gid, member_id)] = joined
        return m.JoinGroupResponse(
            generation_id=member.member_epoch,
            protocol_type=self.protocol_type,
            protocol_name=joined.protocol_name,
            leader="",
            member_id=member_id,
        )

    def _member_id_required(self, group: G, req: m.JoinGroupRequest) -> m.JoinGroupResponse:
        """A dynamic newcomer learns its id first (KIP-394), as in a classic group."""
        gid = group.group_id
        member_id = self.fresh_id(group, req.client_id or self.group_type)
        now = self.ctx.now_ms
        self._issued = {k: t for k, t in self._issued.items() if t > now}  # stays bounded
        self._issued[(gid, member_id)] = now + req.session_timeout_ms
        return m.JoinGroupResponse(
            error_code=Errors.MEMBER_ID_REQUIRED,
            error_message="The group requires a member id: rejoin with the one given.",
            member_id=member_id,
        )

    def fresh_id(self, group: G, prefix: str) -> str:
        """A member id neither in the group nor handed out."""
        gid = group.group_id
        while True:
            member_id = f"{prefix}-{self.ctx.new_member_id()}"
            if member_id not in group.members and (gid, member_id) not in self._issued:
                return member_id

    def known(self, group: G, member_id: str) -> M | None:
        """The member ``member_id`` names (None: an id handed out and still good), or
        UNKNOWN_MEMBER_ID."""
        gid = group.group_id
        member = group.members.get(member_id)
        if member is None and self._issued.get((gid, member_id), -1) <= self.ctx.now_ms:
            raise unknown_member(gid, member_id)
        return member

    def _step(self, group: G, member: M, owned: Any) -> M:
        gid = group.group_id
        mid = member.member_id
        new = self.steps.reconcile(
            member,
            group.assignment_epoch,
            group.target_of(mid),
            owned,
            group.owner_of,
        )
        if new != member:
            self.ctx.emit(Record(self.steps.current_key(gid, mid), new.current))
        return new

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: G, req: m.SyncGroupRequest) -> m.SyncGroupResponse:
        member = self._member(group, req.member_id, req.group_instance_id, req.generation_id)
        if req.protocol_type is not None and req.protocol_type != self.protocol_type:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"The group's protocol type is {self.protocol_type!r}.",
            )
        gid, mid = group.group_id, member.member_id
        joined = self._joined.pop((gid, mid), None)
        self.ports().touch(gid, mid)
        name, assignment = self.sync_assignment(member, req, joined)
        return m.SyncGroupResponse(
            protocol_type=self.protocol_type, protocol_name=name, assignment=assignment
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: G, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        member = self._member(group, req.member_id, req.group_instance_id, req.generation_id)
        self.ports().touch(group.group_id, member.member_id)
        if self.needs_rebalance(group, member):
            return m.HeartbeatResponse(
                error_code=Errors.REBALANCE_IN_PROGRESS, error_message=self.rebalance_message
            )
        return m.HeartbeatResponse()

    def needs_rebalance(self, group: G, member: M) -> bool:
        """Whether one more reconciliation step is waiting for this member (checked as if it
        still held everything it was given: a classic member revokes only by rejoining)."""
        step = self.steps.reconcile(
            member,
            group.assignment_epoch,
            group.target_of(member.member_id),
            self.steps.assigned(member),
            group.owner_of,
        )
        return step != member

    def syncing(self, group_id: str, member_id: str) -> bool:
        """Whether the member got its JoinGroup reply and owes its SyncGroup."""
        return (group_id, member_id) in self._joined

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: G, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        """Each identity that names a member leaves, and every identity is answered. A leave
        that converts the group back to classic is answered here; the identities after it go
        to the classic rules, as the group is classic now (decisions.md: "A leave that
        converts a group back answers every identity")."""
        gid = group.group_id
        results = []
        for i, identity in enumerate(req.members):
            mid, error = self._leaving(group, identity)
            if error == Errors.NONE:
                reason = identity.reason or "no reason given"
                self.ports().fence(group, mid, f"{self.noun} left the group: {reason}")
            results.append(
                m.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error)
            )
            now = self.ctx.groups.get(gid)
            if now is not None and now.group_type == self.group_type:
                group = now
                continue
            rest = req.members[i + 1 :]
            if now is not None and rest:  # it became a classic group again
                results += self.ctx.classic.leave(replace(req, members=rest)).members
            break
        return m.LeaveGroupResponse(members=results)

    @staticmethod
    def _leaving(group: Any, identity: m.MemberIdentity) -> tuple[str, Errors]:
        """The member id a LeaveGroup identity names, or why it names none."""
        mid, iid = identity.member_id, identity.group_instance_id
        if iid is not None:
            holder = group.static_members.get(iid)
            if holder is None:
                return mid, Errors.UNKNOWN_MEMBER_ID
            if mid and mid != holder:
                return mid, Errors.FENCED_INSTANCE_ID
            mid = holder
        return mid, Errors.NONE if mid in group.members else Errors.UNKNOWN_MEMBER_ID

    # ------------------------------------------------------------------ helpers

    def _member(self, group: G, member_id: str, instance_id: str | None, generation: int) -> M:
        """The classic member a Heartbeat or SyncGroup names, at its generation."""
        gid = group.group_id
        if instance_id is not None:
            holder = group.static_members.get(instance_id)
            if holder is not None and holder != member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Instance id {instance_id} is held by member {holder}.",
                )
        member = group.members.get(member_id)
        if member is None:
            raise unknown_member(gid, member_id)
        if member.metadata.classic_member_metadata is None:
            raise unknown_member(gid, member_id, "it uses the new protocol")
        if generation != member.member_epoch:
            raise CoordinatorError(
                Errors.ILLEGAL_GENERATION,
                f"Generation {generation} is not {self.noun} {member_id}'s epoch "
                f"{member.member_epoch}.",
            )
        return member

    def forget(self, group_id: str, member_id: str) -> None:
        """The member is gone: drop what its JoinGroup left here."""
        self._joined.pop((group_id, member_id), None)

    # ------------------------------------------------------------------ hooks

    def read_join(self, group: G, req: m.JoinGroupRequest) -> Joined:
        """Validate and read a JoinGroup (its protocol, what it holds); nothing changes."""
        raise NotImplementedError

    def admit(self, group: G, req: m.JoinGroupRequest) -> str:
        """Add or update the member the JoinGroup names (records, bump, session)."""
        raise NotImplementedError

    def sync_assignment(
        self, member: M, req: m.SyncGroupRequest, joined: Joined | None
    ) -> tuple[str | None, bytes]:
        """SyncGroup's protocol name and assignment bytes for what the member now holds."""
        raise NotImplementedError

    def ports(self) -> Ports:
        raise NotImplementedError


def unknown_member(group_id: str, member_id: str, why: str = "") -> CoordinatorError:
    tail = f": {why}" if why else ""
    return CoordinatorError(
        Errors.UNKNOWN_MEMBER_ID,
        f"Member {member_id} is not a classic member of group {group_id}{tail}.",
    )
