"""Test helpers that speak to a shard the way a Connect worker on the new protocol would.

``Worker`` is a minimal worker: it remembers its id, epoch and what it runs; when a reply's
assignment takes work away it stops it, so its next heartbeat acknowledges the revocation,
and when it adds work it starts it. ``compute`` plays the chosen worker's part of client-side
assignment with the real connect assignor (Prepare, assign, Install).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assignors.client.interfaces import ConnectGroup, ConnectGroupMember
from assignors.connect import MAX_VERSION, MIN_VERSION, IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.connect import units as u
from protocol.errors import Errors
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.shard import GroupCoordinatorShard

GROUP = "cg"
REBALANCE_TIMEOUT_MS = 60_000
ICA = "incremental-cooperative"


def connectors(group_id: str = GROUP, **tasks: int) -> MetadataImage:
    """``connectors(a=3)``: group ``cg`` runs connector ``a`` with 3 tasks."""
    return MetadataImage([], [ConnectorMetadata(group_id, n, t) for n, t in tasks.items()])


def client_assignor(lo: int = 1, hi: int = 2, **extra) -> m.Assignor:
    return m.Assignor(ICA, lo, hi, metadata_version=extra.pop("metadata_version", hi), **extra)


@dataclass
class Worker:
    shard: GroupCoordinatorShard
    member_id: str
    group_id: str = GROUP
    epoch: int = 0
    runs: u.Units = u.EMPTY
    instance_id: str | None = None
    assignors: list[m.Assignor] | None = None
    last: m.ConnectGroupHeartbeatResponse | None = None
    log: list[m.ConnectGroupHeartbeatResponse] = field(default_factory=list)

    def join_request(self, **extra) -> m.ConnectGroupHeartbeatRequest:
        fields = dict(
            member_epoch=0,
            instance_id=self.instance_id,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            client_assignors=[_copy(a) for a in self.assignors] if self.assignors else None,
            connectors_and_tasks=m.ConnectorsAndTasks(),
        )
        fields.update(extra)
        return m.ConnectGroupHeartbeatRequest(self.group_id, self.member_id, **fields)

    def join(self, **extra) -> m.ConnectGroupHeartbeatResponse:
        self.runs = u.EMPTY
        return self.send(self.join_request(**extra))

    def heartbeat_request(self, **extra) -> m.ConnectGroupHeartbeatRequest:
        if self.epoch == 0:
            return self.join_request(**extra)
        fields = dict(member_epoch=self.epoch, connectors_and_tasks=u.to_wire(self.runs))
        fields.update(extra)
        return m.ConnectGroupHeartbeatRequest(self.group_id, self.member_id, **fields)

    def heartbeat(self, **extra) -> m.ConnectGroupHeartbeatResponse:
        return self.send(self.heartbeat_request(**extra))

    def leave(self) -> m.ConnectGroupHeartbeatResponse:
        resp = self.send(m.ConnectGroupHeartbeatRequest(self.group_id, self.member_id, -1))
        self.runs, self.epoch = u.EMPTY, 0
        return resp

    def static_leave(self) -> m.ConnectGroupHeartbeatResponse:
        req = m.ConnectGroupHeartbeatRequest(
            self.group_id, self.member_id, -2, instance_id=self.instance_id
        )
        resp = self.send(req)
        self.runs, self.epoch = u.EMPTY, 0
        return resp

    def send(self, req: object) -> m.ConnectGroupHeartbeatResponse:
        resp = self.shard.handle(req).response
        self.last = resp
        self.log.append(resp)
        if resp.error_code in (Errors.NONE, Errors.COMPUTE_ASSIGNMENT):
            if req.member_epoch >= 0:
                self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.runs = u.from_wire(resp.assignment.connectors_and_tasks)
        elif resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.runs, self.epoch = u.EMPTY, 0
        return resp


def _copy(a: m.Assignor) -> m.Assignor:
    return m.Assignor(
        a.name,
        a.minimum_version,
        a.maximum_version,
        a.reason,
        a.metadata_version,
        a.metadata_bytes,
    )


def compute(
    worker: Worker, now_ms: int = 0, group_epoch: int | None = None
) -> m.ConnectGroupInstallAssignmentResponse:
    """The chosen worker's job: Prepare, run the connect assignor, Install."""
    shard = worker.shard
    prep = shard.handle(
        m.ConnectGroupPrepareAssignmentRequest(worker.group_id, worker.member_id, worker.epoch)
    ).response
    assert prep.error_code == Errors.NONE, prep
    own = worker.assignors[0]
    install = install_request(
        prep, worker.member_id, worker.epoch, (own.minimum_version, own.maximum_version), now_ms
    )
    if group_epoch is not None:
        install.group_epoch = group_epoch
    return shard.handle(install).response


def compute_with(
    shard: GroupCoordinatorShard,
    member_id: str,
    epoch: int,
    versions: tuple[int, int],
    max_delay_ms: int = 300_000,
) -> list:
    """``compute`` for a worker known by id alone; any refusal is fine (it may no longer be
    the chosen one). Returns the records written."""
    prep_result = shard.handle(m.ConnectGroupPrepareAssignmentRequest(GROUP, member_id, epoch))
    prep = prep_result.response
    if prep.error_code != Errors.NONE:
        assert not prep_result.records
        return []
    install = install_request(prep, member_id, epoch, versions, shard.now_ms, max_delay_ms)
    result = shard.handle(install)
    assert result.response.error_code in (Errors.NONE, Errors.INVALID_ASSIGNMENT), result.response
    return result.records


def install_request(
    prep: m.ConnectGroupPrepareAssignmentResponse,
    member_id: str,
    epoch: int,
    versions: tuple[int, int],
    now_ms: int,
    max_delay_ms: int = 300_000,
) -> m.ConnectGroupInstallAssignmentRequest:
    """What the connect assignor, fed a Prepare reply, asks the coordinator to install."""
    # The real assignor reads versions 1-2; wider nominal ranges (the seed's [1-5]) map onto it.
    lo = min(max(versions[0], MIN_VERSION), MAX_VERSION)
    hi = max(lo, min(versions[1], MAX_VERSION))
    assignor = IncrementalCooperativeAssignor(
        max_delay_ms, minimum_version=lo, maximum_version=hi
    )
    members = tuple(
        ConnectGroupMember(
            member_id=p.member_id,
            instance_id=p.instance_id,
            reason=p.assignor.reason,
            version=p.assignor.version,
            metadata=p.assignor.metadata,
            maximum_version=p.maximum_version,
            owned_connectors=frozenset(p.connectors_and_tasks.connectors),
            owned_tasks=frozenset((t.connector, t.task) for t in p.connectors_and_tasks.tasks),
        )
        for p in prep.members
    )
    group = ConnectGroup(
        members=members,
        connectors={c.name: c.task_count for c in prep.connectors},
        now_ms=now_ms,
    )
    result = assignor.assign(group)
    return m.ConnectGroupInstallAssignmentRequest(
        prep.group_id,
        member_id,
        epoch,
        prep.group_epoch,
        members=[
            m.ConnectInstallAssignmentMember(
                a.member_id,
                a.error,
                u.to_wire(frozenset((c, u.CONNECTOR) for c in a.connectors) | a.tasks),
                a.version,
                a.metadata,
            )
            for a in result.members
        ],
    )


def settle(workers: list[Worker], rounds: int = 12, now_ms: int = 0) -> None:
    """Heartbeat every worker (computing when asked) until their group is stable."""
    shard, gid = workers[0].shard, workers[0].group_id
    for _ in range(rounds):
        for w in workers:
            resp = w.heartbeat()
            if resp.error_code == Errors.COMPUTE_ASSIGNMENT:
                assert compute(w, now_ms).error_code == Errors.NONE
        group = shard.groups[gid]
        if group.state == "stable" and all(
            w.runs == group.members[w.member_id].assigned for w in workers
        ):
            return
    raise AssertionError(f"group {gid} did not settle: {shard.groups[gid].state}")


def owners(workers: list[Worker]) -> dict[u.Unit, list[str]]:
    out: dict[u.Unit, list[str]] = {}
    for w in workers:
        for unit in w.runs:
            out.setdefault(unit, []).append(w.member_id)
    return out


def advance(shard: GroupCoordinatorShard, alive: list[Worker], to_ms: int, step_ms: int = 2_000):
    """Move the shard's clock to ``to_ms`` in steps, the ``alive`` workers heartbeating at
    each, so only the others' sessions run out."""
    now = shard.now_ms
    while now < to_ms:
        now = min(now + step_ms, to_ms)
        shard.tick(now)
        for w in alive:
            resp = w.heartbeat()
            if resp.error_code == Errors.COMPUTE_ASSIGNMENT:
                compute(w, now)
