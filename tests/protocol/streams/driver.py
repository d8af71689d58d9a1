"""A pure streams member for tests: the client half of KIP-1071 against a shard, reporting
what it owns and revoking what it is asked to, as Kafka Streams' heartbeat manager does."""

from __future__ import annotations

from protocol.errors import Errors
from protocol.streams import messages as sm
from protocol.streams.records import KeyValue, Subtopology, TopicInfo

# The configs Kafka Streams names for its internal topics (``InternalTopicConfig``).
CHANGELOG_CONFIGS = (KeyValue("cleanup.policy", "compact"),)
REPARTITION_CONFIGS = (KeyValue("cleanup.policy", "delete"), KeyValue("retention.ms", "-1"),
                       KeyValue("segment.bytes", "52428800"))


def topology(source: str = "input", epoch: int = 1, stateful: bool = False,
             repartition: bool = False, app: str = "app") -> sm.StreamsTopology:
    """One subtopology reading ``source``; ``stateful``: with a changelog; ``repartition``:
    a second subtopology behind a repartition topic (with the changelog, if stateful)."""
    changelog = (TopicInfo(f"{app}-store-changelog", topic_configs=CHANGELOG_CONFIGS),) \
        if stateful else ()
    if not repartition:
        return sm.StreamsTopology(epoch, (Subtopology("0", (source,),
                                                      state_changelog_topics=changelog),))
    rep = f"{app}-repartition"
    return sm.StreamsTopology(epoch, (
        Subtopology("0", (source,), repartition_sink_topics=(rep,)),
        Subtopology("1", (), state_changelog_topics=changelog,
                    repartition_source_topics=(TopicInfo(rep, topic_configs=REPARTITION_CONFIGS),)),
    ))


class StreamsMember:
    def __init__(self, shard, member_id: str, group_id: str = "app",
                 topology: sm.StreamsTopology | None = None, process_id: str | None = None,
                 instance_id: str | None = None) -> None:
        self.shard, self.member_id, self.group_id = shard, member_id, group_id
        self.topology = topology or globals()["topology"]()
        self.process_id = process_id or f"process-{member_id}"
        self.instance_id = instance_id
        self.epoch = 0
        self.endpoint_epoch = 0
        self.active: dict[str, list[int]] = {}
        self.standby: dict[str, list[int]] = {}
        self.warmup: dict[str, list[int]] = {}
        self.last: sm.StreamsGroupHeartbeatResponse | None = None

    def _owned(self) -> dict:
        return {"active_tasks": sm.task_ids(self.active),
                "standby_tasks": sm.task_ids(self.standby),
                "warmup_tasks": sm.task_ids(self.warmup)}

    def _send(self, req: sm.StreamsGroupHeartbeatRequest) -> sm.StreamsGroupHeartbeatResponse:
        resp = self.shard.handle(req).response
        self.last = resp
        if resp.error_code == Errors.NONE:
            self.epoch = resp.member_epoch
            self.endpoint_epoch = resp.endpoint_information_epoch
            if resp.active_tasks is not None:
                self.active = sm.task_map(resp.active_tasks)
                self.standby = sm.task_map(resp.standby_tasks or [])
                self.warmup = sm.task_map(resp.warmup_tasks or [])
        return resp

    def join(self, **kw) -> sm.StreamsGroupHeartbeatResponse:
        self.active, self.standby, self.warmup = {}, {}, {}
        return self._send(sm.StreamsGroupHeartbeatRequest(
            self.group_id, self.member_id, 0, self.endpoint_epoch, instance_id=self.instance_id,
            rebalance_timeout_ms=30_000, topology=self.topology, process_id=self.process_id,
            **{"active_tasks": [], "standby_tasks": [], "warmup_tasks": [], **kw}))

    def heartbeat(self, **kw) -> sm.StreamsGroupHeartbeatResponse:
        return self._send(sm.StreamsGroupHeartbeatRequest(
            self.group_id, self.member_id, self.epoch, self.endpoint_epoch,
            instance_id=self.instance_id, **{**self._owned(), **kw}))

    def leave(self, epoch: int = -1) -> sm.StreamsGroupHeartbeatResponse:
        return self._send(sm.StreamsGroupHeartbeatRequest(
            self.group_id, self.member_id, epoch, self.endpoint_epoch,
            instance_id=self.instance_id))
