"""The partition log: what was appended comes back after a restart; a crash costs at most the
unacknowledged torn last append, and any other damage (a flipped byte, a missing segment)
refuses the load, naming the file and offset, and keeps every byte (invariant 9)."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

import crc32c
import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.runtime import log_frames
from actors.runtime.log import (
    FRAME_HEADER_BYTES,
    LoadedLog,
    LogCorruptError,
    PartitionLog,
    encode_frame,
)


def frame_bytes(batch: list[bytes]) -> int:
    return FRAME_HEADER_BYTES + len(msgpack.packb(batch, use_bin_type=True))


def some_batches(n: int) -> list[list[bytes]]:
    """Batches of different sizes, so no offset lines up by accident."""
    return [[f"b{i}r{j}".encode() * (j + 1) for j in range(i % 3 + 1)] for i in range(n)]


def reopen(directory: Path, **kwargs: object) -> tuple[PartitionLog, LoadedLog]:
    kwargs.setdefault("fsync", False)
    log = PartitionLog(directory, **kwargs)  # type: ignore[arg-type]
    return log, log.load()


def write_log(directory: Path, batches: list[list[bytes]], **kwargs: object) -> None:
    log, _ = reopen(directory, **kwargs)
    for batch in batches:
        log.append(batch)
    log.close()


def segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_appended_batches_come_back_in_order_as_batches_after_reopen(tmp_path: Path) -> None:
    batches = some_batches(20)
    write_log(tmp_path, batches, fsync=True)

    log, loaded = reopen(tmp_path, fsync=True)
    log.close()

    assert loaded.batches == batches
    assert loaded.snapshot == []
    assert loaded.records == sum(len(b) for b in batches)
    assert loaded.truncated_bytes == 0
    assert loaded.records_per_s > 0


def test_a_batch_is_framed_as_length_crc32c_and_a_msgpack_list(tmp_path: Path) -> None:
    write_log(tmp_path, [[b"a", b"bc"]])

    data = segments(tmp_path)[0].read_bytes()
    length, crc = struct.unpack(">II", data[:8])
    payload = data[8:]

    assert length == len(payload)
    assert crc == crc32c.crc32c(payload)
    assert msgpack.unpackb(payload) == [b"a", b"bc"]
    assert segments(tmp_path)[0].name == "00000000000000000001.log"


def test_a_fresh_directory_loads_empty_and_is_created(tmp_path: Path) -> None:
    log, loaded = reopen(tmp_path / "a" / "b")
    log.close()

    assert (tmp_path / "a" / "b").is_dir()
    assert loaded == LoadedLog([], [], 0, loaded.seconds, 0)
    assert loaded.records_per_s == 0.0


def test_appending_before_load_is_refused(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, fsync=False)
    with pytest.raises(RuntimeError, match="load"):
        log.append([b"x"])
    with pytest.raises(RuntimeError, match="load"):
        log.write_snapshot([b"x"])


def test_load_twice_and_append_after_close_are_refused(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path)
    with pytest.raises(RuntimeError, match="once"):
        log.load()
    log.close()
    with pytest.raises(RuntimeError, match="closed"):
        log.append([b"x"])


def test_an_empty_append_writes_nothing(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path)
    log.append([])
    log.close()

    assert segments(tmp_path)[0].stat().st_size == 0
    assert log.bytes_since_snapshot == 0


def test_a_record_over_the_frame_bound_is_refused_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _ = reopen(tmp_path)
    monkeypatch.setattr(log_frames, "MAX_BATCH_BYTES", 100)
    with pytest.raises(ValueError, match="MAX_BATCH_BYTES"):
        log.append([b"x" * 200])
    log.append([b"small"])
    log.close()

    assert reopen(tmp_path)[1].batches == [[b"small"]]


def test_a_turn_over_the_frame_bound_is_written_as_several_frames_and_read_back_as_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_frames, "MAX_BATCH_BYTES", 100)
    monkeypatch.setattr(log_frames, "TURN_FRAME_BYTES", 60)
    turn = [b"record-%02d" % i for i in range(40)]  # ~600 bytes: six times the frame bound
    log, _ = reopen(tmp_path)
    log.append([b"before"])
    log.append(turn)
    log.append([b"after"])
    log.close()

    frames = log_frames.scan_frames(segments(tmp_path)[0])
    assert frames[0] == [[b"before"], turn, [b"after"]]
    assert reopen(tmp_path)[1].batches == [[b"before"], turn, [b"after"]]


def test_a_split_turn_torn_anywhere_is_dropped_whole_never_half_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_frames, "TURN_FRAME_BYTES", 60)
    turn = [b"record-%02d" % i for i in range(20)]
    source = tmp_path / "source"
    write_log(source, [[b"acknowledged"]])
    start = segments(source)[0].stat().st_size
    write_log(source, [turn])
    end = segments(source)[0].stat().st_size
    assert end - start > 3 * 60, "several frames"

    for cut in range(start, end):
        copy = tmp_path / f"at-{cut}"
        shutil.copytree(source, copy)
        with open(segments(copy)[0], "r+b") as f:
            f.truncate(cut)
        log, loaded = reopen(copy)
        assert loaded.batches == [[b"acknowledged"]], cut
        assert segments(copy)[0].stat().st_size == start, "cut back to the whole turns"
        log.append([b"next"])
        log.close()
        assert reopen(copy)[1].batches == [[b"acknowledged"], [b"next"]], cut
        shutil.rmtree(copy)


def test_a_record_that_is_not_bytes_is_refused_before_it_reaches_disk(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path)
    with pytest.raises(TypeError, match="bytes"):
        log.append([b"ok", "text"])  # type: ignore[list-item]
    log.close()

    assert segments(tmp_path)[0].stat().st_size == 0


def test_truncated_at_every_byte_offset_of_its_last_batch_the_log_opens_with_the_batches_before(
    tmp_path: Path,
) -> None:
    batches = some_batches(4)
    source = tmp_path / "source"
    write_log(source, batches)
    last_start = sum(frame_bytes(b) for b in batches[:-1])
    last_end = last_start + frame_bytes(batches[-1])
    assert segments(source)[0].stat().st_size == last_end

    for offset in range(last_start, last_end):
        copy = tmp_path / f"at-{offset}"
        shutil.copytree(source, copy)
        with open(segments(copy)[0], "r+b") as f:
            f.truncate(offset)

        log, loaded = reopen(copy)
        assert loaded.batches == batches[:-1], offset
        assert loaded.truncated_bytes == offset - last_start
        assert segments(copy)[0].stat().st_size == last_start
        log.append([b"after"])
        log.close()

        assert reopen(copy)[1].batches == [*batches[:-1], [b"after"]], offset


def test_a_tail_of_zeros_left_by_a_crash_is_cut_off(tmp_path: Path) -> None:
    batches = some_batches(3)
    write_log(tmp_path, batches)
    with open(segments(tmp_path)[0], "ab") as f:
        f.write(bytes(4096))

    log, loaded = reopen(tmp_path)
    log.close()

    assert loaded.batches == batches
    assert loaded.truncated_bytes == 4096


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def refuses_keeping_bytes(directory: Path, name: str, offset: int | None = None,
                          **kwargs: object) -> str:
    """Loading ``directory`` refuses, naming file ``name`` (and ``offset``), and no log byte
    changed; returns the message."""
    before = files_of(directory)
    with pytest.raises(LogCorruptError) as refused:
        reopen(directory, **kwargs)
    message = str(refused.value)
    assert name in message
    if offset is not None:
        assert f"byte offset {offset}" in message
    after = files_of(directory)
    after.pop("epoch", None)  # the refusing opener took an epoch: that file alone may change
    before.pop("epoch", None)
    assert after == before
    return message


# Positions inside a frame: length (high, low byte), CRC (first, last), payload (first, middle,
# last). -1 means the frame's last byte.
FLIP_POSITIONS = [0, 3, 4, 7, 8, 12, -1]


@pytest.mark.parametrize("corrupt", [3, 5])  # a frame in the middle; the very last frame
@pytest.mark.parametrize("position", FLIP_POSITIONS)
def test_a_flipped_byte_in_the_last_segment_refuses_the_load_naming_file_and_offset(
    tmp_path: Path, position: int, corrupt: int
) -> None:
    batches = some_batches(6)
    write_log(tmp_path, batches)
    start = sum(frame_bytes(b) for b in batches[:corrupt])
    end = start + frame_bytes(batches[corrupt])
    path = segments(tmp_path)[0]
    flip_byte(path, start + position if position >= 0 else end + position)

    refuses_keeping_bytes(tmp_path, path.name, start)


def test_a_flipped_byte_in_an_earlier_segment_refuses_the_load_and_keeps_the_bytes(
    tmp_path: Path,
) -> None:
    batches = [[bytes([i]) * 40] for i in range(12)]  # 51-byte frames: two per 110-byte segment
    write_log(tmp_path, batches, segment_max_bytes=110)
    assert len(segments(tmp_path)) == 6
    second = segments(tmp_path)[1]
    flip_byte(second, frame_bytes(batches[2]) + 20)  # batch 3, the second in segment 2

    message = refuses_keeping_bytes(tmp_path, second.name, frame_bytes(batches[2]),
                                    segment_max_bytes=110)
    assert "4 later segment(s)" in message
    assert len(segments(tmp_path)) == 6


def test_a_torn_looking_tail_of_an_earlier_segment_refuses_the_load(tmp_path: Path) -> None:
    batches = [[bytes([i]) * 40] for i in range(6)]
    write_log(tmp_path, batches, segment_max_bytes=110)
    first = segments(tmp_path)[0]
    with open(first, "r+b") as f:
        f.truncate(first.stat().st_size - 1)  # only the last segment may end mid-frame

    refuses_keeping_bytes(tmp_path, first.name, frame_bytes(batches[0]), segment_max_bytes=110)


def test_a_damaged_length_pointing_past_the_end_does_not_pass_for_a_torn_tail(
    tmp_path: Path,
) -> None:
    batches = some_batches(5)
    write_log(tmp_path, batches)
    path = segments(tmp_path)[0]
    for corrupt in (2, 4):  # later frames follow it; it is the last frame
        copy = tmp_path.parent / f"{tmp_path.name}-{corrupt}"
        shutil.copytree(tmp_path, copy)
        start = sum(frame_bytes(b) for b in batches[:corrupt])
        data = bytearray((copy / path.name).read_bytes())
        data[start + 2] |= 0x40  # length grows by 16 KiB: past the end of the file
        (copy / path.name).write_bytes(bytes(data))

        refuses_keeping_bytes(copy, path.name, start)


def test_a_missing_segment_refuses_the_load_naming_it(tmp_path: Path) -> None:
    batches = [[bytes([i]) * 40] for i in range(12)]
    write_log(tmp_path, batches, segment_max_bytes=110)
    missing = segments(tmp_path)[2]
    missing.unlink()

    refuses_keeping_bytes(tmp_path, missing.name, 0, segment_max_bytes=110)


def test_a_missing_first_segment_after_a_snapshot_refuses_the_load(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path, segment_max_bytes=110)
    log.write_snapshot([b"state"])
    for i in range(6):
        log.append([bytes([i]) * 40])
    log.close()
    first = segments(tmp_path)[0]
    first.unlink()

    refuses_keeping_bytes(tmp_path, first.name, 0, segment_max_bytes=110)


def test_a_frame_whose_crc_matches_but_is_not_a_list_of_bytes_refuses_the_load(
    tmp_path: Path,
) -> None:
    write_log(tmp_path, [[b"good"]])
    payload = msgpack.packb(["text", 1], use_bin_type=True)
    with open(segments(tmp_path)[0], "ab") as f:
        f.write(struct.pack(">II", len(payload), crc32c.crc32c(payload)) + payload)

    refuses_keeping_bytes(tmp_path, segments(tmp_path)[0].name, frame_bytes([b"good"]))


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=3),
                     min_size=1, max_size=12),
    segment_max_bytes=st.sampled_from([1, 64, 200, 1 << 20]),
    snapshot=st.booleans(),
    where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    mask=st.integers(min_value=1, max_value=255),
)
def test_a_flipped_byte_anywhere_gives_everything_or_refuses_naming_the_file(
    batches: list[list[bytes]], segment_max_bytes: int, snapshot: bool, where: float, mask: int
) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        log, _ = reopen(directory, segment_max_bytes=segment_max_bytes)
        if snapshot:
            log.append([b"before the snapshot"])
            log.write_snapshot([b"before the snapshot"])
        for batch in batches:
            log.append(batch)
        log.close()
        files = [p for p in sorted(directory.iterdir())
                 if p.suffix in (".log", ".snap") and p.stat().st_size]
        sizes = [p.stat().st_size for p in files]
        at = int(where * sum(sizes))
        index = 0
        while at >= sizes[index]:
            at -= sizes[index]
            index += 1
        path = files[index]
        data = bytearray(path.read_bytes())
        data[at] ^= mask
        path.write_bytes(bytes(data))

        before = files_of(directory)
        try:
            log, loaded = reopen(directory, segment_max_bytes=segment_max_bytes)
        except LogCorruptError as refused:
            assert path.name in str(refused)
            assert "offset" in str(refused)
            after = files_of(directory)
            assert {k: v for k, v in after.items() if k != "epoch"} == {
                k: v for k, v in before.items() if k != "epoch"}
        else:  # pragma: no cover - a single flipped byte is always caught by the CRC
            log.close()
            assert loaded.batches == batches
            assert loaded.snapshot == ([b"before the snapshot"] if snapshot else [])


def test_segments_roll_before_an_append_would_pass_segment_max_bytes(tmp_path: Path) -> None:
    batches = [[bytes([i]) * 40] for i in range(10)]  # 51-byte frames
    write_log(tmp_path, batches, segment_max_bytes=160)
    write_log(tmp_path, [[b"x" * 500]], segment_max_bytes=160)  # bigger than a segment

    files = segments(tmp_path)
    sizes = [f.stat().st_size for f in files]
    assert [f.name for f in files] == [f"{n:020d}.log" for n in range(1, 6)]
    assert sizes == [153, 153, 153, 51, frame_bytes([b"x" * 500])]
    assert reopen(tmp_path)[1].batches == [*batches, [b"x" * 500]]


def test_after_a_snapshot_old_segments_are_gone_and_load_gives_it_plus_later_batches(
    tmp_path: Path,
) -> None:
    log, _ = reopen(tmp_path, segment_max_bytes=1, fsync=True)  # one segment per batch
    for batch in some_batches(5):
        log.append(batch)
    log.write_snapshot([b"k1=v1", b"k2=v2"])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "00000000000000000006.log", "epoch", "snapshot-00000000000000000006.snap", "writer.lock"
    ]
    assert log.bytes_since_snapshot == 0
    log.append([b"k3=v3"])
    log.append([b"k1=v4"])
    log.close()

    log, loaded = reopen(tmp_path, fsync=True)
    log.close()
    assert loaded.snapshot == [b"k1=v1", b"k2=v2"]
    assert loaded.batches == [[b"k3=v3"], [b"k1=v4"]]
    assert loaded.records == 4


def test_a_snapshot_covers_its_segments_even_if_their_deletion_was_interrupted(
    tmp_path: Path,
) -> None:
    log, _ = reopen(tmp_path)
    log.append([b"old"])
    kept = tmp_path / "kept"
    kept.mkdir()
    shutil.copy(segments(tmp_path)[0], kept)
    log.write_snapshot([b"state"])
    log.close()
    shutil.copy(kept / "00000000000000000001.log", tmp_path)  # as if the crash came before unlink

    log, loaded = reopen(tmp_path)
    log.close()

    assert (loaded.snapshot, loaded.batches) == ([b"state"], [])
    assert not (tmp_path / "00000000000000000001.log").exists()


def test_a_temp_snapshot_left_by_a_crash_is_ignored_and_removed(tmp_path: Path) -> None:
    write_log(tmp_path, [[b"a"], [b"b"]])
    temp = tmp_path / "snapshot-00000000000000000002.snap.tmp"
    temp.write_bytes(encode_frame([b"half"])[:7])

    log, loaded = reopen(tmp_path)
    log.close()

    assert (loaded.snapshot, loaded.batches) == ([], [[b"a"], [b"b"]])
    assert not temp.exists()


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_corrupt_snapshot_refuses_to_load(tmp_path: Path, damage: str) -> None:
    log, _ = reopen(tmp_path)
    log.write_snapshot([b"state-%d" % i for i in range(100)])
    log.close()
    (snapshot,) = tmp_path.glob("*.snap")
    if damage == "flip":
        flip_byte(snapshot, 30)
    else:
        with open(snapshot, "r+b") as f:
            f.truncate(snapshot.stat().st_size - 1)

    with pytest.raises(LogCorruptError, match=snapshot.name):
        PartitionLog(tmp_path, fsync=False).load()


def test_a_large_snapshot_is_written_in_bounded_frames(tmp_path: Path) -> None:
    records = [i.to_bytes(4, "big") for i in range(25_000)]
    log, _ = reopen(tmp_path)
    log.write_snapshot(iter(records))
    log.close()

    (snapshot,) = tmp_path.glob("*.snap")
    data, frames, offset = snapshot.read_bytes(), 0, 0
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        offset += FRAME_HEADER_BYTES + length
        frames += 1
    assert frames == 3
    assert reopen(tmp_path)[1].snapshot == records


def test_a_snapshot_that_fails_midway_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    log, _ = reopen(tmp_path)
    log.append([b"a"])
    with pytest.raises(TypeError):
        log.write_snapshot([b"ok", 7])  # type: ignore[list-item]
    log.append([b"b"])
    log.close()

    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".log", ".snap", ".tmp")) == [
        "00000000000000000001.log"
    ]
    assert reopen(tmp_path)[1].batches == [[b"a"], [b"b"]]


def test_bytes_since_snapshot_counts_appended_frames_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    batches = some_batches(4)
    log, _ = reopen(tmp_path)
    log.append(batches[0])
    log.write_snapshot([b"s"])
    for batch in batches[1:]:
        log.append(batch)
    expected = sum(frame_bytes(b) for b in batches[1:])
    assert log.bytes_since_snapshot == expected
    log.close()

    assert reopen(tmp_path)[0].bytes_since_snapshot == expected
    assert log.directory == tmp_path


# A step is ("append", records), ("snapshot",), ("reopen",) or ("torn", fraction): a crash that
# left part of one more frame at the end of the newest segment.
steps = st.one_of(
    st.tuples(st.just("append"), st.lists(st.binary(min_size=1, max_size=40), max_size=5)),
    st.tuples(st.just("snapshot")),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("torn"), st.floats(min_value=0.0, max_value=0.99)),
)


@settings(max_examples=200)
@given(
    script=st.lists(steps, max_size=25),
    segment_max_bytes=st.sampled_from([1, 64, 300, 1 << 20]),
)
def test_loaded_snapshot_and_batches_always_equal_the_model(
    script: list[tuple], segment_max_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        model_snapshot: list[bytes] = []
        model_batches: list[list[bytes]] = []
        log, _ = reopen(directory, segment_max_bytes=segment_max_bytes)

        def check_reopen() -> PartitionLog:
            log.close()
            new_log, loaded = reopen(directory, segment_max_bytes=segment_max_bytes)
            assert loaded.snapshot == model_snapshot
            assert loaded.batches == model_batches
            return new_log

        for step in script:
            if step[0] == "append":
                log.append(step[1])
                if step[1]:
                    model_batches.append(step[1])
            elif step[0] == "snapshot":
                model_snapshot += [r for batch in model_batches for r in batch]
                model_batches = []
                log.write_snapshot(model_snapshot)
            elif step[0] == "torn":
                frame = encode_frame([b"never acknowledged"])
                with open(segments(directory)[-1], "ab") as f:
                    f.write(frame[: 1 + int(step[1] * (len(frame) - 1))])
                log = check_reopen()
            else:
                log = check_reopen()
        check_reopen().close()
