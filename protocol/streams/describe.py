"""StreamsGroupDescribe (API 89) in Kafka's shape, and a streams group in DescribeGroups'.

Each group: state, group and assignment epochs, the topology (its subtopologies with the
internal topics sized as configured when the topology is ready), and each member's instance,
rack, client, topology epoch, process, endpoint, client tags, task offsets, current and target
tasks; v1 adds the assignor's name (the sticky one, Cohort's only) and, when asked for, the
topology description's status (never stored: Kafka's answer without its description plugin).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from assignors.streams import StickyTaskAssignor
from protocol import messages as m
from protocol.errors import Errors
from protocol.modern.describe import describe_each
from protocol.streams import messages as sm
from protocol.streams.group import GROUP_TYPE, StreamsGroup
from protocol.streams.member import Tasks
from protocol.streams.records import StreamsGroupTopologyValue, Subtopology, TopicInfo

# KIP-1331's TopologyDescriptionStatus for a described group whose description was asked for:
# NOT_STORED, what Kafka answers without its topology description plugin (Cohort has none).
TOPOLOGY_DESCRIPTION_NOT_STORED = 1


def describe_groups(rules: Any, req: sm.StreamsGroupDescribeRequest
                    ) -> sm.StreamsGroupDescribeResponse:
    groups = describe_each(rules.ctx, req, GROUP_TYPE, partial(describe_group, rules),
                           sm.StreamsDescribedGroup)
    if req.include_topology_description:
        for g in groups:
            if g.error_code == Errors.NONE:
                g.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED
    return sm.StreamsGroupDescribeResponse(groups=groups)


def _assignment(tasks: Tasks) -> sm.StreamsAssignment:
    a, s, w = tasks.maps()
    return sm.StreamsAssignment(sm.task_ids(a), sm.task_ids(s), sm.task_ids(w))


def _topology(rules: Any, group: StreamsGroup) -> sm.StreamsTopology | None:
    """The stored topology, internal topics sized as configured when it is ready."""
    topology: StreamsGroupTopologyValue | None = group.topology
    if topology is None:
        return None
    configured = rules.configured(group)
    sizes = {}
    if configured is not None and configured.ready:
        image = rules.ctx.image
        for s in topology.subtopologies:
            for t in (*s.state_changelog_topics, *s.repartition_source_topics):
                found = image.topic_by_name(t.name)
                if found is not None:
                    sizes[t.name] = found.num_partitions

    def sized(t: TopicInfo) -> TopicInfo:
        return TopicInfo(t.name, sizes.get(t.name, t.partitions), t.replication_factor,
                         t.topic_configs)

    subs = tuple(Subtopology(
        s.subtopology_id, s.source_topics, (),
        tuple(sized(t) for t in s.state_changelog_topics), s.repartition_sink_topics,
        tuple(sized(t) for t in s.repartition_source_topics)) for s in topology.subtopologies)
    return sm.StreamsTopology(topology.epoch, subs)


def describe_group(rules: Any, group: StreamsGroup) -> sm.StreamsDescribedGroup:
    members = []
    for mid, mm in sorted(group.members.items()):
        t = group.target.get(mid, group.NO_TARGET)
        offsets = group.task_offsets.get(mid, ([], []))
        md = mm.metadata
        members.append(sm.StreamsDescribedMember(
            member_id=mid, member_epoch=mm.member_epoch, instance_id=md.instance_id,
            rack_id=md.rack_id, client_id=md.client_id, client_host=md.client_host,
            topology_epoch=md.topology_epoch, process_id=md.process_id,
            user_endpoint=md.user_endpoint, client_tags=list(md.client_tags),
            task_offsets=list(offsets[0]), task_end_offsets=list(offsets[1]),
            assignment=_assignment(mm.tasks),
            target_assignment=_assignment(Tasks.of(t.active_tasks, t.standby_tasks,
                                                   t.warmup_tasks))))
    return sm.StreamsDescribedGroup(
        group_id=group.group_id, group_state=group.state, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch, topology=_topology(rules, group),
        members=members, assignor_name=StickyTaskAssignor.name)


def describe_as_classic(group: StreamsGroup, history: list) -> m.DescribeGroupsResponseGroup:
    """A streams group in DescribeGroups' shape: protocol type ``streams``, its members."""
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id, group_state=group.state, protocol_type=group.protocol_type,
        protocol_data="", members=[
            m.DescribedGroupMember(member_id=mm.member_id, group_instance_id=mm.instance_id,
                                   client_id=mm.client_id, client_host=mm.client_host)
            for _, mm in sorted(group.members.items())],
        generation_id=group.group_epoch, rebalance_history=history)
