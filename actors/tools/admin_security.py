"""ACLs and SCRAM users in the controller: what ``cohort acls`` and ``cohort users`` do.

``kafka-acls.sh`` and ``kafka-configs.sh --entity-type users`` for Cohort. Bindings are checked
(``protocol.security.acls.check_binding``) by the controller before they are stored; a user's
password never leaves this process: its SCRAM-SHA-256 credential (random salt, PBKDF2) is
computed here and only that is stored, as Kafka stores SCRAM users.
"""

from __future__ import annotations

import os

import ray
from ray.exceptions import RayTaskError

from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE
from actors.tools.admin import Columns
from protocol.errors import CoordinatorError
from protocol.security.acls import AclBinding, AclFilter
from protocol.security.scram import MIN_ITERATIONS, make_credential

ACL_COLUMNS: Columns = [
    ("PRINCIPAL", "principal"), ("PERMISSION", "permission"), ("OPERATION", "operation"),
    ("RESOURCE", "resource_type"), ("NAME", "resource_name"), ("PATTERN", "pattern_type"),
    ("HOST", "host"),
]
USER_COLUMNS: Columns = [("USER", "user"), ("MECHANISM", "mechanism")]
SALT_BYTES = 16


def _controller():
    return ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)


def _get(ref):
    """``ray.get`` that raises the controller's refusal as the ``CoordinatorError`` it is."""
    try:
        return ray.get(ref)
    except RayTaskError as e:
        if isinstance(e.cause, CoordinatorError):
            raise e.cause from None
        raise


def acl_row(b: AclBinding) -> dict:
    return {"principal": b.principal, "permission": b.permission, "operation": b.operation,
            "resource_type": b.resource_type, "resource_name": b.resource_name,
            "pattern_type": b.pattern_type, "host": b.host}


def add_acls(bindings: list[AclBinding]) -> int:
    """Store the bindings; how many were new (an existing one is kept once)."""
    return _get(_controller().add_acls.remote(bindings))


def remove_acls(flt: AclFilter) -> list[AclBinding]:
    return _get(_controller().remove_acls.remote(flt))


def list_acls(flt: AclFilter | None = None) -> list[AclBinding]:
    return _get(_controller().list_acls.remote(flt))


def add_user(name: str, password: str, iterations: int = MIN_ITERATIONS) -> None:
    """Create or change a SCRAM-SHA-256 user (its PLAIN password is the same)."""
    if not password:
        raise ValueError("the password must not be empty")
    credential = make_credential(password, os.urandom(SALT_BYTES), iterations)
    _get(_controller().set_user.remote(name, credential))


def delete_user(name: str) -> None:
    _get(_controller().delete_user.remote(name))


def list_users() -> list[str]:
    return _get(_controller().user_names.remote())
