"""``ObjectLog`` beyond the shared storage contract: racing writers, ambiguous PUTs, snapshots
that delete what they cover, and the storage marker. Races run on a real S3 endpoint
(SeaweedFS, the ``seaweedfs`` fixture) as well as obstore's ``MemoryStore``.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from actors.runtime.fencing import LogFencedError
from actors.runtime.object_log import SLOT_WEIGHT_BYTES, ObjectLog
from actors.runtime.object_slots import AlreadyExistsError, ObjectOps, open_store
from actors.runtime.storage_factory import open_storage
from actors.runtime.storage_marker import (
    MARKER,
    StorageMarkerError,
    check_marker,
    claim_marker,
)
from actors.runtime.turns import PartitionTurns
from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from tests.actors.runtime.test_storage import records
from tests.actors.runtime.test_turns import fetch_image, inline, join
from tests.object_store import aws_env


@pytest.fixture(params=["memory", "seaweedfs"])
def url(request: pytest.FixtureRequest):
    """A fresh storage root, with the AWS_* variables set while the test runs."""
    if request.param == "memory":
        yield f"memory://{uuid.uuid4().hex}"
        return
    server = request.getfixturevalue("seaweedfs")
    with aws_env(server.env):
        yield server.url()


def open_log(url: str, ops: ObjectOps | None = None) -> ObjectLog:
    return ObjectLog(open_store(url), "offsets-0", ops=ops)


def race(url: str, tag: str) -> tuple[list[ObjectLog], list[list[bytes]], list[bool]]:
    """Two incarnations load at once, then each appends 20 records until fenced."""
    logs = [open_log(url), open_log(url)]
    barrier = threading.Barrier(2)
    acked: list[list[bytes]] = [[], []]
    fenced = [False, False]

    def write(i: int) -> None:
        barrier.wait()
        logs[i].load()
        barrier.wait()
        for n in range(20):
            record = f"{tag}-w{i}-{n}".encode()
            try:
                logs[i].append([record])
            except LogFencedError:
                fenced[i] = True
                return
            acked[i].append(record)

    threads = [threading.Thread(target=write, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return logs, acked, fenced


def test_two_writers_racing_for_one_log_exactly_one_wins_and_no_ack_is_lost(url):
    for round_ in range(5):
        tag = f"r{round_}"
        logs, acked, fenced = race(url, tag)
        assert sorted(fenced) == [False, True], fenced  # exactly one writer was fenced
        winner = fenced.index(False)
        assert len(acked[winner]) == 20
        assert logs[winner].epoch > logs[1 - winner].epoch
        durable = records(open_log(url).load())
        # every acknowledged record is there, the loser's all before the winner's first
        mine = [r for r in durable if r.startswith(f"{tag}-".encode())]
        assert mine == acked[1 - winner] + acked[winner]


class LostReply(ObjectOps):
    """The PUT lands but its reply is lost (a reset after the server wrote it)."""

    def __init__(self) -> None:
        self.lose_next = False

    def put(self, store, key, data, create):
        super().put(store, key, data, create)
        if self.lose_next:
            self.lose_next = False
            raise OSError("connection reset (injected, after the write landed)")


class NeverSent(ObjectOps):
    """The PUT fails before the server saw it, and the slot reads back empty."""

    def __init__(self) -> None:
        self.fail_next = False

    def put(self, store, key, data, create):
        if self.fail_next:
            self.fail_next = False
            raise OSError("timeout (injected, nothing written yet)")
        super().put(store, key, data, create)


def test_an_ambiguous_put_that_landed_is_settled_by_reading_the_slot_back(url):
    ops = LostReply()
    log = open_log(url, ops)
    log.load()
    ops.lose_next = True
    log.append([b"landed"])  # the read-back found our own bytes: written
    assert not log.failed
    log.append([b"next"])
    assert records(open_log(url).load()) == [b"landed", b"next"]


def test_an_ambiguous_put_that_did_not_land_fails_and_recover_fences_its_late_copy(url):
    ops = NeverSent()
    log = open_log(url, ops)
    log.load()
    log.append([b"a"])
    slot = log.next_slot
    ops.fail_next = True
    with pytest.raises(OSError):
        log.append([b"late"])
    assert log.failed
    assert records(log.recover()) == [b"a"]
    # the PUT's copy arriving now finds the slot claimed by recover: it can never land
    with pytest.raises(AlreadyExistsError):
        ObjectOps().put(open_store(url), f"offsets-0/log/{slot:020d}", b"late", create=True)
    log.append([b"b"])
    assert records(open_log(url).load()) == [b"a", b"b"]


def test_a_snapshot_deletes_the_slots_it_covers_and_a_zombies_snapshot_is_ignored(url):
    log = open_log(url)
    log.load()
    for n in range(10):
        log.append([f"k{n % 3}={n}".encode()])
    assert log.bytes_since_snapshot >= 11 * SLOT_WEIGHT_BYTES  # object count counts
    log.write_snapshot([b"k0=9", b"k1=7", b"k2=8"])
    store = open_store(url)
    slots = ObjectOps().list(store, "offsets-0/log/")
    # the covered slots are gone; the fence (slot 0, kept: it stops zombies) and the marker stay
    assert slots == ["offsets-0/log/00000000000000000000", "offsets-0/log/00000000000000000011"]
    log.append([b"k0=10"])
    newer = open_log(url)
    loaded = newer.load()
    assert loaded.snapshot == [b"k0=9", b"k1=7", b"k2=8"]
    assert loaded.batches == [[b"k0=10"]]
    with pytest.raises(LogFencedError):
        log.write_snapshot([b"zombie=1"])  # its snapshot object lands, its marker cannot
    assert open_log(url).load().snapshot == [b"k0=9", b"k1=7", b"k2=8"]


class FrozenOpener(ObjectOps):
    """An opener that freezes between its listing and its fence: ``meanwhile`` runs then."""

    def __init__(self, meanwhile) -> None:
        self.meanwhile = meanwhile

    def put(self, store, key, data, create):
        if self.meanwhile is not None and "/log/" in key:
            run, self.meanwhile = self.meanwhile, None
            run()
        super().put(store, key, data, create)


def test_an_opener_frozen_while_a_snapshot_deleted_its_slot_reads_again_not_empty(url):
    writer = open_log(url)
    writer.load()

    def meanwhile() -> None:  # the slot the opener listed as next is written, then deleted
        for n in range(3):
            writer.append([f"w{n}".encode()])
        writer.write_snapshot([b"w0", b"w1", b"w2"])

    opener = open_log(url, FrozenOpener(meanwhile))
    assert records(opener.load()) == [b"w0", b"w1", b"w2"]  # never an empty log
    with pytest.raises(LogFencedError):
        writer.append([b"zombie"])
    opener.append([b"o1"])
    assert records(open_log(url).load()) == [b"w0", b"w1", b"w2", b"o1"]


def test_a_zombie_whose_next_slot_a_snapshot_covered_is_still_fenced(url):
    old = open_log(url)
    old.load()
    old.append([b"a"])
    new = open_log(url)
    new.load()  # its fence takes old's next slot
    for n in range(3):
        new.append([f"n{n}".encode()])
    new.write_snapshot([b"a", b"n0", b"n1", b"n2"])  # deletes what it covers, not fences
    with pytest.raises(LogFencedError):
        old.append([b"zombie"])
    with pytest.raises(LogFencedError):
        old.check_fence()
    assert records(open_log(url).load()) == [b"a", b"n0", b"n1", b"n2"]


def test_storage_marker_is_written_once_and_adopted(url):
    first = claim_marker(url)
    assert claim_marker(url) == first
    check_marker(url, first)
    assert ObjectOps().exists(open_store(url), MARKER)


def test_storage_of_another_cohort_or_without_marker_is_refused(url):
    with pytest.raises(StorageMarkerError, match="missing"):
        open_storage(url, "offsets-0", cluster_id="abc").load()
    claim_marker(url)
    with pytest.raises(StorageMarkerError, match="belongs to Cohort"):
        open_storage(url, "offsets-0", cluster_id="abc").load()
    assert ObjectOps().list(open_store(url), "offsets-0/") == []  # nothing written


def test_a_local_directory_without_the_marker_is_refused(tmp_path):
    cluster_id = claim_marker(str(tmp_path / "a"))
    open_storage(str(tmp_path / "a"), "offsets-0", cluster_id=cluster_id).load()
    with pytest.raises(StorageMarkerError, match="missing"):
        open_storage(str(tmp_path / "b"), "offsets-0", cluster_id=cluster_id).load()


def test_a_missing_bucket_is_a_clear_error(seaweedfs):
    with aws_env(seaweedfs.env), pytest.raises(StorageMarkerError, match="bucket"):
        claim_marker("s3://no-such-bucket-here/prefix")


def test_a_partition_on_unmarked_storage_refuses_to_serve_and_says_why(url):
    async def scenario() -> None:
        storage = open_storage(url, "offsets-0", cluster_id="ours")
        turns = PartitionTurns("offsets-0", storage, CoordinatorConfig(), fetch_image,
                               in_thread=inline)
        task = asyncio.get_running_loop().create_task(turns.run())
        for _ in range(200):
            if turns.state != "loading":
                break
            await asyncio.sleep(0.01)
        assert turns.state == "failed"
        assert "missing" in storage.refusal
        (reply,) = await turns.handle_batch([join("m1")])
        assert isinstance(reply, m.ConsumerGroupHeartbeatResponse)
        assert reply.error_code == Errors.COORDINATOR_NOT_AVAILABLE
        task.cancel()

    asyncio.run(scenario())


def test_a_partition_on_object_storage_serves_and_a_new_incarnation_sees_its_commits(url):
    cluster_id = claim_marker(url)

    async def serve_once(member: str) -> int:
        storage = open_storage(url, "offsets-0", cluster_id=cluster_id)
        turns = PartitionTurns("offsets-0", storage, CoordinatorConfig(), fetch_image,
                               in_thread=inline)
        task = asyncio.get_running_loop().create_task(turns.run())
        for _ in range(500):
            if turns.state == "active":
                break
            await asyncio.sleep(0.01)
        (reply,) = await turns.handle_batch([join(member)])
        assert reply.error_code == Errors.NONE
        members = await turns.query(lambda shard: len(shard.groups["g"].members))
        task.cancel()
        return members

    assert asyncio.run(serve_once("m1")) == 1
    assert asyncio.run(serve_once("m2")) == 2  # m1 came back from the object store
