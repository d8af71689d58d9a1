"""The controller's security section: ACL bindings and SCRAM users, durable, pushed to the
gateways and the partitions (each partition is a broker for its groups, with every gateway's
listener settings).

Kafka keeps both in its metadata log (``kafka-acls``, ``kafka-configs --entity-type users``);
here they are records in the controller's own log, beside topics and group configs, replayed
on load and compacted with the rest. A change is durable before it is applied, then pushed
(best effort, bounded) to the gateway, which also re-reads the image every second, so an ACL
added by ``cohort acls --add`` is in force when the command returns if the gateway is up. The
rules (what a binding is, what may be stored) are pure, in ``protocol/security``; this mixin
only stores them. Users are stored as SCRAM credentials, never passwords.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import msgpack
import ray

from actors.runtime.one_change import one_change_at_a_time
from protocol.errors import CoordinatorError, Errors
from protocol.security.acls import AclBinding, AclFilter, check_binding
from protocol.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential

log = logging.getLogger(__name__)

GATEWAY_NAME = "gateway"
PUSH_TIMEOUT_S = 5.0
MAX_ACLS = 100_000
MAX_USERS = 100_000
USER_NAME_MAX_CHARS = 255
# An ACL record is keyed by its binding's fields joined by NUL (no field may hold one).
_SEP = "\x00"


@dataclass(frozen=True)
class SecurityImage:
    """What the gateway needs: every binding and every user's credential, versioned."""

    version: int
    acls: tuple[AclBinding, ...] = ()
    users: dict[str, ScramCredential] = field(default_factory=dict)


class SecurityStore:
    """Mixed into ``Controller``: needs its ``_commit``, ``_push``, change lock
    (``one_change_at_a_time``), ``_encode``-style records and ``_version``; adds ``_acls`` and
    ``_users``."""

    def _init_security(self) -> None:
        self._acls: dict[tuple, AclBinding] = {}
        self._users: dict[str, ScramCredential] = {}

    # --------------------------------------------------------------------------- ACLs

    @one_change_at_a_time(gateway=True)
    async def add_acls(self, bindings: list[AclBinding]) -> int:
        """Store ``bindings`` (already stored ones are kept once); how many were new."""
        checked = [check_binding(b) for b in bindings]
        new = {tuple(b.as_list()): b for b in checked if tuple(b.as_list()) not in self._acls}
        if len(self._acls) + len(new) > MAX_ACLS:
            raise CoordinatorError(Errors.INVALID_REQUEST, f"at most {MAX_ACLS} ACLs")
        if new:
            await self._commit([_acl_record(b, b) for b in new.values()])
        return len(new)

    @one_change_at_a_time(gateway=True)
    async def remove_acls(self, flt: AclFilter) -> list[AclBinding]:
        gone = [b for b in self._acls.values() if flt.matches(b)]
        if gone:
            await self._commit([_acl_record(b, None) for b in gone])
        return sorted(gone)

    def list_acls(self, flt: AclFilter | None = None) -> list[AclBinding]:
        return sorted(b for b in self._acls.values() if flt is None or flt.matches(b))

    # -------------------------------------------------------------------------- users

    @one_change_at_a_time(gateway=True)
    async def set_user(self, name: str, credential: ScramCredential) -> None:
        if not isinstance(name, str) or not 0 < len(name) <= USER_NAME_MAX_CHARS:
            raise CoordinatorError(Errors.INVALID_REQUEST, "a user name is 1-255 characters")
        if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
            raise CoordinatorError(Errors.INVALID_REQUEST,
                                   f"iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
        if name not in self._users and len(self._users) >= MAX_USERS:
            raise CoordinatorError(Errors.INVALID_REQUEST, f"at most {MAX_USERS} users")
        await self._commit([self._security_record("user", name, credential.as_list())])

    @one_change_at_a_time(gateway=True)
    async def delete_user(self, name: str) -> None:
        if name not in self._users:
            raise CoordinatorError(Errors.INVALID_REQUEST, f"no user {name!r}")
        await self._commit([self._security_record("user", name, None)])

    def user_names(self) -> list[str]:
        return sorted(self._users)

    def security_image(self) -> SecurityImage:
        return SecurityImage(self._version, tuple(sorted(self._acls.values())),
                             dict(self._users))

    # ---------------------------------------------------------------------- internals

    def _security_record(self, kind: str, name: str, payload: object) -> bytes:
        return msgpack.packb([kind, name, payload], use_bin_type=True)

    async def _push_gateway(self) -> None:
        """Push the image to every running gateway (``gateway``, ``gateway-<name>``) and
        every partition (each listens for the gateways' clients and authorizes them), all at
        once, each bounded by ``PUSH_TIMEOUT_S``."""
        names = [n for n in ray.util.list_named_actors()
                 if n == GATEWAY_NAME or n.startswith(GATEWAY_NAME + "-")]
        names += [f"offsets-{p}" for p in range(self.num_partitions)]
        image = self.security_image()
        await asyncio.gather(*(_push_security(name, image) for name in names))

    def _replay_security(self, kind: str, name: str, payload: object) -> bool:
        """Apply an ``acl`` or ``user`` record; False for any other kind."""
        if kind == "acl":
            key = tuple(name.split(_SEP))
            if payload is None:
                self._acls.pop(key, None)
            else:
                self._acls[key] = AclBinding.from_list(list(payload))
            return True
        if kind == "user":
            if payload is None:
                self._users.pop(name, None)
            else:
                self._users[name] = ScramCredential.from_list(list(payload))
            return True
        return False

    def _security_records(self) -> list[bytes]:
        out = [_acl_record(b, b) for b in self._acls.values()]
        out += [self._security_record("user", n, c.as_list()) for n, c in self._users.items()]
        return out


async def _push_security(name: str, image: SecurityImage) -> None:
    try:
        actor = ray.get_actor(name, namespace="cohort")
        await asyncio.wait_for(actor.update_security.remote(image), PUSH_TIMEOUT_S)
    except Exception as e:  # gone or restarting: a gateway re-reads the image on its own, and
        log.info("security push to %s failed: %s", name, e)  # it brings partitions up to date


def _acl_record(b: AclBinding, payload: AclBinding | None) -> bytes:
    name = _SEP.join(b.as_list())
    return msgpack.packb(["acl", name, None if payload is None else payload.as_list()],
                         use_bin_type=True)
