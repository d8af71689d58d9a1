"""Bumping a Connect group's epoch, once per event, and computing its target when the
coordinator's own assignor is in charge (``modern.epochs``; seed 004's list of triggers).

The bump records the group's connectors as the metadata image has them, so a later image that
differs is noticed (``ConnectGroupRules.on_metadata``).
"""

from __future__ import annotations

from protocol.connect.group import ConnectGroup
from protocol.connect.records import ConnectGroupMetadataValue, ConnectorEntry
from protocol.connect.target import Targets, compute_server_targets
from protocol.modern.epochs import EpochTurn


class ConnectEpochs(EpochTurn):
    """The Connect groups an event changed, and what settling them writes."""

    group_type = "connect"

    def group_value(self, group: ConnectGroup, epoch: int) -> ConnectGroupMetadataValue:
        connectors = self.ctx.image.connectors_of(group.group_id)
        entries = tuple(ConnectorEntry(name, n) for name, n in sorted(connectors.items()))
        return ConnectGroupMetadataValue(epoch, entries)

    def client_side(self, group: ConnectGroup) -> bool:
        return group.assignor(self.ctx.config.default_connect_assignor).client_side

    def compute_targets(self, group: ConnectGroup) -> Targets:
        config = self.ctx.group_config(group.group_id)
        delay_ms = config.effective_scheduled_rebalance_max_delay_ms(self.ctx.config)
        return compute_server_targets(group, self.ctx.now_ms, delay_ms)
