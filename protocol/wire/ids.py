"""Topic ids and error codes as Kafka's wire carries them.

Cohort's topic ids are strings; the controller makes them the way Kafka prints a ``Uuid``
(URL-safe base64 of 16 random bytes, no padding), so the wire's UUID and Cohort's string are
one id written two ways and convert without a lookup: a client sees the same id from Metadata
on every call and after every restart, because the controller keeps it. A string that is not
such an encoding (a hand-made id in a test) maps to a name-based UUID, which ``TopicIndex``
(``wire.topics``) maps back.

Cohort's error numbers are Kafka's, except the seeds' own codes (10001+), which no Kafka
client knows; on the wire they become UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import uuid

_ID_NAMESPACE = uuid.UUID("6b9d1e4c-3c1f-4d8e-9a51-2f0c7e3a8b10")
KAFKA_MAX_ERROR = 1000
UNKNOWN_SERVER_ERROR = -1


def topic_uuid(topic_id: str) -> uuid.UUID:
    """Cohort's topic id as the wire's UUID."""
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == 16 and uuid_topic_id(uuid.UUID(bytes=raw)) == topic_id:
        return uuid.UUID(bytes=raw)
    return uuid.uuid5(_ID_NAMESPACE, topic_id)


def uuid_topic_id(value: uuid.UUID | None) -> str:
    """The wire's UUID as Cohort's topic id string (Kafka's ``Uuid.toString``)."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def kafka_error(code: int) -> int:
    """A Cohort error code as a Kafka client may read it."""
    code = int(code)
    return code if -1 <= code <= KAFKA_MAX_ERROR else UNKNOWN_SERVER_ERROR


def kafka_client_host(address: str) -> str:
    """A peer's address as Kafka shows a member's client host: Java's
    ``InetAddress.toString()`` of an address without a host name, ``/127.0.0.1`` (IPv6 in
    Java's uncompressed form, ``/0:0:0:0:0:0:0:1``). Describe replies and the admin tools show
    it; Kafka's and Cohort's read the same."""
    if not address:
        return address
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "/" + address
    if ip.version == 6:
        return "/" + ":".join(f"{int(group, 16):x}" for group in ip.exploded.split(":"))
    return "/" + str(ip)
