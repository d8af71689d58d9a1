"""The part of a connection that hands frames to an upstream (``actors.upstream``): which
frames go there (read as far as their header), Cohort's ACLs on them when the listener has an
authorizer (``protocol.security.relay_acls``), and TxnOffsetCommit's refusal. A mixin of
``connection.Connection``, kept apart so each file holds one concern.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from actors.gateway.serving import WireRequest
from actors.upstream.relay import goes_upstream
from protocol.api import BY_API_KEY
from protocol.security import relay_acls
from protocol.security.acls import ANONYMOUS
from protocol.wire.codec import RequestHeader, WireError, read_header
from protocol.wire.upstream import (
    TXN_OFFSET_COMMIT,
    decode_request_body,
    encode_reply,
    encode_request,
    txn_offset_commit_refusal,
)


class CloseConnection(Exception):
    """End this connection (the reason is logged)."""


_Close = CloseConnection


class Relaying:
    """Mixed into ``Connection``: its ``core``, ``relay``, ``relay_keys``, ``principal``,
    ``client_host`` and reply queue (``_reply_now``, ``_has_room``, ``_room_for_one``,
    ``_owe``, ``_flush``)."""

    async def _relayed(self, frame: bytes) -> bool:
        """Relay ``frame`` upstream if it goes there (``actors.upstream.relay``): its header
        read, its body left as it is; False if Cohort serves it."""
        try:
            header, body_offset = read_header(frame)
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None
        if not goes_upstream(header, frame, self.relay_keys):
            return False
        if self.principal is None:
            raise _Close(f"API {header.api_key} before SASL authentication completed")
        self.core.count(header.api_key, header.api_version)
        if header.api_key == TXN_OFFSET_COMMIT:  # refused, by a coordinator or a broker alike
            try:
                reply = txn_offset_commit_refusal(frame)
            except Exception as e:
                raise _Close(f"TxnOffsetCommit that does not decode: {e}") from None
            await self._reply_now("TxnOffsetCommit", reply)
            return True
        merge = None
        if self.core.options.authorizer:  # Cohort's ACLs hold on what it relays
            checked = await self._checked_relay(header, frame)
            if checked is None:
                return True  # answered here
            frame, merge = checked
        if not self._has_room():
            await self._room_for_one()
        self._check_failed()
        if merge is None and self.relay.passes_through(header):  # the reply goes back as is
            reply = self.relay.send(header, frame, body_offset, self._flush)
            if reply is not None:
                self._owe(f"api-{header.api_key} (relayed)", reply, tells=True)
            if self.relay.writing_paused:
                await self.relay.drain()
            return True
        task = asyncio.get_running_loop().create_task(
            self.relay.forward(header, frame, merge))
        self._owe(f"api-{header.api_key} (relayed)", task)
        return True

    async def _checked_relay(self, header: RequestHeader, frame: bytes
                             ) -> tuple[bytes, Callable | None] | None:
        """``frame`` checked against Cohort's ACLs (``relay_acls``): the frame to relay (as it
        came, or without what was refused) and what its reply gains; None when answered here
        (nothing allowed); ``_Close`` for an API it may not use at all."""
        try:
            body = decode_request_body(frame)
        except Exception as e:
            raise _Close(f"API {header.api_key} that does not decode: {e}") from None
        req = WireRequest(header, body, self.principal or ANONYMOUS, self.client_host,
                          BY_API_KEY.get(header.api_key))
        index = await self.core.topics_knowing(uuids=_topic_ids(header.api_key, body))
        plan = relay_acls.plan(header.api_key, body,
                               lambda op, rtype, name: self.core.may(req, op, rtype, name),
                               lambda topic_id: getattr(index.by_uuid.get(topic_id), "name",
                                                        None))
        if plan is None:
            return frame, None
        if plan.close is not None:
            raise _Close(f"not authorized: {plan.close}")
        if plan.reply is not None:
            data = encode_reply(header.api_key, header.api_version, header.correlation_id,
                                plan.reply)
            await self._reply_now(f"api-{header.api_key}", len(data).to_bytes(4, "big") + data)
            return None
        again = encode_request(header.api_key, header.api_version, header.correlation_id,
                               header.client_id, plan.allowed)
        return again[4:], plan.merge


def _topic_ids(api_key: int, body: dict) -> list:
    """The topic ids a relayed Fetch names (v13+ names topics by id only)."""
    if api_key != 1:
        return []
    return [t["topic_id"] for t in body.get("topics") or [] if t.get("topic_id") is not None]
