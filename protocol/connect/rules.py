"""The Connect group rules (seed 004). Placeholder until the coordinator side lands: every
Connect request is refused with UNSUPPORTED_VERSION, typed as its reply."""

from __future__ import annotations

from typing import Any

from protocol.errors import CoordinatorError, Errors


class ConnectGroupRules:
    def __init__(self, shard: Any) -> None:
        self.shard = shard

    def _refuse(self, _req: object) -> object:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "Connect groups are not served yet")

    heartbeat = prepare_assignment = install_assignment = describe = _refuse
