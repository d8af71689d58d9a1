"""The deadlines of a share group, as typed timer keys (the shard routes them by type)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShareTimer:
    group_id: str


@dataclass(frozen=True, slots=True)
class ShareMemberTimer(ShareTimer):
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareMemberSession(ShareMemberTimer):
    """No heartbeat by now removes the member (session timeout); its records are released."""


@dataclass(frozen=True, slots=True)
class ShareMemberRevocation(ShareMemberTimer):
    """The kernel's revocation deadline; never armed: a share member revokes nothing."""


@dataclass(frozen=True, slots=True)
class ShareLockExpiry(ShareTimer):
    """The earliest acquisition lock of one share-partition runs out by now."""

    topic_id: str
    partition: int
