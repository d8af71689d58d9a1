"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, retention.

(Being written: the interface the shard calls is fixed here.)
"""

from __future__ import annotations

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import Record


class OffsetRules:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    def commit(self, req: m.OffsetCommitRequest) -> m.OffsetCommitResponse:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "offsets are not implemented yet")

    def fetch(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "offsets are not implemented yet")

    def delete(self, req: m.OffsetDeleteRequest) -> m.OffsetDeleteResponse:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "offsets are not implemented yet")

    def delete_groups(self, req: m.DeleteGroupsRequest) -> m.DeleteGroupsResponse:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "DeleteGroups is not implemented yet")

    def replay(self, record: Record) -> None:
        pass

    def on_timer(self, key: tuple) -> None:
        pass
