"""librdkafka's mock cluster, the differential oracle for the gateway.

librdkafka ships an in-process mock Kafka cluster (``rd_kafka_mock_cluster_new``) that speaks
the wire protocol, coordinates classic and KIP-848 groups, and is what librdkafka's own tests
run against. confluent-kafka's wheel bundles the library, so ctypes reaches the C API without
building anything: this wraps the few calls a scenario needs (create a cluster, create a
topic, set the KIP-848 heartbeat interval and session timeout) so that the same real clients
can run the same scenario against the mock and against Cohort's gateway.
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import cache

ERRSTR_BYTES = 512
RD_KAFKA_PRODUCER = 0


@cache
def librdkafka() -> ctypes.CDLL:
    """The librdkafka bundled in confluent-kafka's wheel (the one its clients use)."""
    import confluent_kafka

    here = os.path.dirname(confluent_kafka.__file__)
    found = sorted(glob.glob(os.path.join(here, os.pardir, "confluent_kafka.libs",
                                          "librdkafka*.so*")))
    if not found:
        raise RuntimeError("no bundled librdkafka next to confluent_kafka")
    lib = ctypes.CDLL(found[0])
    c_void_p, c_int, c_char_p = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    for name, restype, argtypes in (
        ("rd_kafka_conf_new", c_void_p, []),
        ("rd_kafka_conf_set", c_int, [c_void_p, c_char_p, c_char_p, c_char_p, ctypes.c_size_t]),
        ("rd_kafka_new", c_void_p, [c_int, c_void_p, c_char_p, ctypes.c_size_t]),
        ("rd_kafka_destroy", None, [c_void_p]),
        ("rd_kafka_mock_cluster_new", c_void_p, [c_void_p, c_int]),
        ("rd_kafka_mock_cluster_destroy", None, [c_void_p]),
        ("rd_kafka_mock_cluster_bootstraps", c_char_p, [c_void_p]),
        ("rd_kafka_mock_topic_create", c_int, [c_void_p, c_char_p, c_int, c_int]),
        ("rd_kafka_mock_set_group_consumer_heartbeat_interval_ms", None, [c_void_p, c_int]),
        ("rd_kafka_mock_set_group_consumer_session_timeout_ms", None, [c_void_p, c_int]),
        ("rd_kafka_mock_start_request_tracking", None, [c_void_p]),
        ("rd_kafka_mock_get_requests", ctypes.POINTER(c_void_p),
         [c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
        ("rd_kafka_mock_request_api_key", ctypes.c_int16, [c_void_p]),
        ("rd_kafka_mock_request_destroy_array", None, [ctypes.POINTER(c_void_p), ctypes.c_size_t]),
        ("rd_kafka_mock_clear_requests", None, [c_void_p]),
    ):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class MockCluster:
    """One librdkafka mock cluster; ``bootstrap`` is its ``bootstrap.servers``."""

    def __init__(self, brokers: int = 1) -> None:
        lib = librdkafka()
        conf = lib.rd_kafka_conf_new()
        err = ctypes.create_string_buffer(ERRSTR_BYTES)
        # A quiet handle that only hosts the cluster (it never connects anywhere).
        lib.rd_kafka_conf_set(conf, b"log_level", b"0", err, ERRSTR_BYTES)
        self._rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, ERRSTR_BYTES)
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {err.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int, replication: int = 1) -> None:
        code = librdkafka().rd_kafka_mock_topic_create(self._mc, name.encode(), partitions,
                                                       replication)
        if code != 0:
            raise RuntimeError(f"mock topic {name} not created: error {code}")

    def set_group_consumer_timing(self, heartbeat_interval_ms: int,
                                  session_timeout_ms: int) -> None:
        """KIP-848's broker-side heartbeat interval and session timeout, as Cohort's group
        configs set them."""
        lib = librdkafka()
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(self._mc,
                                                                   heartbeat_interval_ms)
        lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(self._mc, session_timeout_ms)

    def track_requests(self) -> None:
        """Start recording every request the cluster receives (``requests_by_key``)."""
        librdkafka().rd_kafka_mock_start_request_tracking(self._mc)

    def requests_by_key(self, clear: bool = True) -> dict[int, int]:
        """How many requests of each API key arrived since tracking started (or since the
        last call that cleared them)."""
        lib = librdkafka()
        count = ctypes.c_size_t(0)
        reqs = lib.rd_kafka_mock_get_requests(self._mc, ctypes.byref(count))
        out: dict[int, int] = {}
        for i in range(count.value):
            key = int(lib.rd_kafka_mock_request_api_key(reqs[i]))
            out[key] = out.get(key, 0) + 1
        if reqs:
            lib.rd_kafka_mock_request_destroy_array(reqs, count.value)
        if clear:
            lib.rd_kafka_mock_clear_requests(self._mc)
        return out

    def close(self) -> None:
        if self._mc:
            librdkafka().rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            librdkafka().rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
