"""Disk faults at the log: a write or fsync that fails leaves the log refusing writes until it
recovers, and recovering cuts it back to exactly what was acknowledged, whatever the failed
write left behind (nothing, half a frame, or a whole frame whose fsync failed)."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from actors.runtime.fileops import FileOps
from actors.runtime.log import PartitionLog
from tests.actors.runtime.faults import FlagFileFaults


class FailingFsync(FileOps):
    """Writes reach the file; the next ``fsync`` fails once armed (EIO), as a failing device's
    writeback does: the bytes may be in the page cache and still never reach the disk."""

    def __init__(self) -> None:
        self.armed = False

    def fsync(self, fd: int) -> None:
        if self.armed:
            raise OSError(errno.EIO, "injected EIO")
        super().fsync(fd)


def reloaded(directory: Path) -> tuple[list[bytes], list[list[bytes]]]:
    log = PartitionLog(directory, fsync=False)
    loaded = log.load()
    log.close()
    return loaded.snapshot, loaded.batches


@pytest.mark.parametrize("partial", [False, True], ids=["nothing-written", "half-written"])
def test_a_failed_write_is_refused_until_recovery_which_keeps_only_the_acknowledged(
    tmp_path: Path, partial: bool
) -> None:
    flag = tmp_path / "disk-full"
    log = PartitionLog(tmp_path / "log", file_ops=FlagFileFaults(flag, partial=partial))
    log.load()
    log.append([b"a"])
    flag.touch()

    with pytest.raises(OSError) as info:
        log.append([b"lost", b"turn"])
    assert info.value.errno == errno.ENOSPC
    assert log.failed
    with pytest.raises(RuntimeError, match="recover"):
        log.append([b"b"])
    with pytest.raises(OSError):
        log.recover()  # the disk still fails: so does recovery, and the log stays failed
    assert log.failed

    flag.unlink()
    loaded = log.recover()
    assert not log.failed
    assert loaded.batches == [[b"a"]]
    log.append([b"b"])
    log.close()
    assert reloaded(tmp_path / "log") == ([], [[b"a"], [b"b"]])


def test_recovery_refuses_while_the_disk_takes_no_writes_even_after_the_cut(tmp_path: Path) -> None:
    """Cutting the failed frame frees a few bytes; a disk that is still full must not pass
    for a working one (the next turn would fail again, and the partition would reload for
    nothing)."""

    class FullDisk(FileOps):
        free_bytes = 10**9

        def write(self, f, data):  # type: ignore[no-untyped-def]
            if len(data) > self.free_bytes:
                raise OSError(errno.ENOSPC, "injected ENOSPC")
            self.free_bytes -= len(data)
            return super().write(f, data)

    ops = FullDisk()
    log = PartitionLog(tmp_path, file_ops=ops)
    log.load()
    log.append([b"a"])
    ops.free_bytes = 100
    with pytest.raises(OSError):
        log.append([b"x" * 1000])
    with pytest.raises(OSError):
        log.recover()
    assert log.failed
    ops.free_bytes = 10**9
    assert log.recover().batches == [[b"a"]]
    assert not (tmp_path / "probe.tmp").exists()
    log.close()


def test_a_whole_frame_whose_fsync_failed_is_cut_by_recovery(tmp_path: Path) -> None:
    ops = FailingFsync()
    log = PartitionLog(tmp_path, file_ops=ops)
    log.load()
    log.append([b"a"])
    ops.armed = True
    with pytest.raises(OSError):
        log.append([b"never acknowledged"])
    ops.armed = False

    # The frame is whole in the file (a plain reader would take it): recovery must not.
    assert b"never acknowledged" in next(tmp_path.glob("*.log")).read_bytes()
    assert log.recover().batches == [[b"a"]]
    log.close()
    assert reloaded(tmp_path) == ([], [[b"a"]])


def test_a_snapshot_that_fails_while_written_leaves_the_log_writable(tmp_path: Path) -> None:
    flag = tmp_path / "disk-full"
    log = PartitionLog(tmp_path / "log", file_ops=FlagFileFaults(flag))
    log.load()
    log.append([b"a"])
    flag.touch()
    with pytest.raises(OSError):
        log.write_snapshot([b"state"])
    flag.unlink()
    assert not log.failed
    log.append([b"b"])
    log.close()
    assert not list((tmp_path / "log").glob("*.snap*"))
    assert reloaded(tmp_path / "log") == ([], [[b"a"], [b"b"]])


def test_a_snapshot_that_fails_while_published_recovers_to_the_same_state(tmp_path: Path) -> None:
    class FailDirectorySync(FileOps):
        armed = False

        def fsync(self, fd: int) -> None:
            import os
            import stat

            if self.armed and stat.S_ISDIR(os.fstat(fd).st_mode):
                raise OSError(errno.EIO, "injected EIO on the directory")
            super().fsync(fd)

    ops = FailDirectorySync()
    log = PartitionLog(tmp_path, file_ops=ops)
    log.load()
    log.append([b"k=1"])
    log.append([b"k=2"])
    ops.armed = True
    with pytest.raises(OSError):
        log.write_snapshot([b"k=2"])
    assert log.failed
    ops.armed = False
    loaded = log.recover()
    log.append([b"k=3"])
    log.close()
    # Either the published snapshot or the segments it covers: the same state, nothing lost.
    state = [*loaded.snapshot, *(r for b in loaded.batches for r in b)]
    assert state in ([b"k=2"], [b"k=1", b"k=2"])
    snapshot, batches = reloaded(tmp_path)
    assert [*snapshot, *(r for b in batches for r in b)] == [*state, b"k=3"]


def test_a_real_write_limit_fails_the_append_and_recovery_after_it_is_lifted(
    tmp_path: Path,
) -> None:
    """The kernel refuses the write (RLIMIT_FSIZE: EFBIG, a per-process "disk full" that needs
    no root), in a child process so the limit touches nothing else."""
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})
        from actors.runtime.log import PartitionLog
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        log = PartitionLog({str(tmp_path)!r})
        log.load()
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        acknowledged = 0
        try:
            while True:
                log.append([b"x" * 100])
                acknowledged += 1
        except OSError as e:
            print("refused", e.errno, acknowledged)
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        loaded = log.recover()
        print("recovered", len(loaded.batches))
        log.append([b"after"])
        log.close()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out[:2] == ["refused", str(errno.EFBIG)]
    acknowledged = int(out[2])
    assert acknowledged > 0
    assert out[3:] == ["recovered", str(acknowledged)]
    assert reloaded(tmp_path)[1] == [[b"x" * 100]] * acknowledged + [[b"after"]]
