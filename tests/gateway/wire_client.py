"""A bare Kafka wire client for the tests: kafka-python's message classes over a socket."""

from __future__ import annotations

import socket
import ssl
import struct
import time


class WireClient:
    def __init__(self, bootstrap: str, tls: ssl.SSLContext | None = None,
                 timeout_s: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self.sock = tls.wrap_socket(sock, server_hostname=host) if tls else sock
        self._correlation = 0

    def send(self, request, version: int | None = None) -> int:
        """Send a kafka-python request; its correlation id."""
        self._correlation += 1
        if version is not None:
            request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id="wire-test")
        self.send_raw(bytes(request.encode(header=True, framed=True)))
        return self._correlation

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, response_class, version: int):
        size = struct.unpack(">i", self._read(4))[0]
        return response_class.decode(self._read(size), version=version, header=True)

    def call(self, request, response_class, version: int):
        self.send(request, version)
        return self.receive(response_class, version)

    def closed_by_peer(self, within_s: float = 10.0) -> bool:
        """True once the gateway closes the connection (EOF), False if it stays open."""
        deadline = time.monotonic() + within_s
        self.sock.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except (ConnectionResetError, ssl.SSLError):
                return True
            if not data:
                return True
        return False

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def offset_commit_request(group: str, topic: str, offset: int, partition: int = 0):
    """kafka-python's OffsetCommit v8 committing ``offset`` to one partition, as a simple
    (memberless) group does."""
    from kafka.protocol.consumer import OffsetCommitRequest as oc

    return oc[8](group_id=group, generation_id_or_member_epoch=-1, member_id="",
                 group_instance_id=None, topics=[oc.OffsetCommitRequestTopic(
                     name=topic, partitions=[oc.OffsetCommitRequestTopic.
                                             OffsetCommitRequestPartition(
                                                 partition_index=partition,
                                                 committed_offset=offset,
                                                 committed_leader_epoch=-1,
                                                 committed_metadata="")])])
