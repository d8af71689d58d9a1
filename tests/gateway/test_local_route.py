"""``LocalRoute``: a partition's listener answering a many-group request from its own turns.
The groups it coordinates go to its mailbox as one request naming each once; the others are
NOT_COORDINATOR; a group named 50,000 times costs one describe, not 50,000 (nor a set rebuilt
per name)."""

from __future__ import annotations

import asyncio

from actors.gateway.broker import LocalRoute
from protocol import messages as m
from protocol.errors import Errors
from protocol.placement import partition_for

PARTITIONS = 2


class _Turns:
    """The mailbox: each request it gets, answered with every group not found."""

    def __init__(self) -> None:
        self.got: list[m.DescribeGroupsRequest] = []

    async def handle_batch(self, requests: list, typed: bool = False) -> list:
        self.got += requests
        return [m.DescribeGroupsResponse(groups=[
            m.DescribeGroupsResponseGroup(error_code=Errors.GROUP_ID_NOT_FOUND, group_id=g)
            for g in r.groups]) for r in requests]


def _group_on(p: int) -> str:
    return next(g for k in range(1000) if partition_for(g := f"g{k}", PARTITIONS) == p)


def test_a_partition_asks_its_turns_about_a_group_named_many_times_once():
    turns = _Turns()
    route = LocalRoute(turns, 0, PARTITIONS)
    mine, other = _group_on(0), _group_on(1)
    replies = asyncio.run(route.call_by_partition(
        [mine, other] * 50_000, lambda gs: m.DescribeGroupsRequest(groups=gs)))
    assert [r.groups for r in turns.got] == [[mine]]
    assert replies[mine].groups[0].error_code == Errors.GROUP_ID_NOT_FOUND
    assert [g.error_code for g in replies[other].groups] == [Errors.NOT_COORDINATOR]
