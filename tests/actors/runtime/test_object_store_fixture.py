"""The tests' SeaweedFS starts even when another process takes one of its ports first: its
ports come from below the kernel's ephemeral range, and a start that loses one is tried again on
new ports (a CI run lost the filer's gRPC port to a connection between the probe and the bind)."""

from __future__ import annotations

import socket

from tests import object_store


def test_ports_are_drawn_below_the_ephemeral_range_with_their_grpc_twins():
    low = object_store._ephemeral_low()
    ports = object_store._free_ports(40)
    assert len(set(ports)) == 40
    assert all(p >= 10_000 and p + object_store.GRPC_OFFSET < max(low, 22_000) for p in ports)


def test_a_start_whose_port_is_taken_is_tried_again_on_new_ports(monkeypatch):
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    drawn: list[list[int]] = []
    real = object_store._free_ports

    def first_one_taken(count: int) -> list[int]:
        ports = real(count)
        if not drawn:
            ports[0] = taken  # the S3 port: already listening here
        drawn.append(ports)
        return ports

    monkeypatch.setattr(object_store, "_free_ports", first_one_taken)
    try:
        with object_store.seaweedfs() as server:
            assert len(drawn) == 2
            assert server.endpoint == f"http://127.0.0.1:{drawn[1][0]}"
            assert server.url().startswith(f"s3://{object_store.BUCKET}/")
    finally:
        held.close()


def test_a_port_lost_before_a_long_goroutine_dump_is_still_taken_for_a_port_lost():
    log = ("I1128 starting\n"
           "F1128 s3.go:434 S3 API Server listener on 127.0.0.1:1 error: listen tcp "
           "127.0.0.1:1: bind: address already in use\n"
           + "goroutine 1 [running]:\n\tgithub.com/seaweedfs/weed/glog.output()\n" * 400)
    error = object_store.exit_error(255, log)
    assert isinstance(error, object_store.PortTaken)
    assert "S3 API Server listener" in str(error).splitlines()[0]
    other = object_store.exit_error(1, "F1128 out of disk\n" + "goroutine\n" * 400)
    assert type(other) is RuntimeError and "out of disk" in str(other).splitlines()[0]
