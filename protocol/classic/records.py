"""A classic group's one record (seed 003): Kafka's ``GroupMetadata``, record type 2.

A classic group's generation and membership are written whole, as one record, whose tombstone
deletes the group; its offsets and rebalance history are deleted apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from protocol.records import ClassicProtocol, TopicMetadataEntry


@dataclass(frozen=True)
class GroupMetadataKey:
    TYPE: ClassVar[int] = 2
    group_id: str

@dataclass(frozen=True)
class GroupMemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata for the group's protocol
    assignment: bytes
    # Every protocol the member supports (Kafka keeps only the chosen one, so a reloaded
    # group would refuse joiners the original accepted).
    protocols: tuple[ClassicProtocol, ...] = ()

@dataclass(frozen=True)
class GroupMetadataValue:
    """A classic group's generation and membership, written as one record (seed 003).

    Written when a generation starts (the join phase completes) and again when its
    assignment arrives (the leader's SyncGroup); ``state`` tells a loading coordinator which.
    ``topics`` is the subscribed topics' metadata as of the generation, so a new coordinator
    can see that partitions changed while nobody was looking (seed 003, failure point 1).
    """

    protocol_type: str
    generation: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMemberMetadata, ...] = ()
    state: str = "empty"
    topics: tuple[TopicMetadataEntry, ...] = ()


SCHEMAS: dict[type, type] = {GroupMetadataKey: GroupMetadataValue}
