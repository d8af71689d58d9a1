"""Disks that fail on demand, for the tests of the log and of the partition's durability."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

from actors.runtime.fileops import FileOps


class FlagFileFaults(FileOps):
    """A disk that fails every write and fsync while ``flag`` exists (ENOSPC by default).

    The switch is a file, so it works across processes: a test creates and removes it while a
    partition actor, in another process, runs with this ``FileOps``. ``partial`` makes a
    failing write put half its bytes on disk first, as a disk that fills up mid-write does.
    """

    def __init__(self, flag: str | os.PathLike[str], error: int = errno.ENOSPC,
                 partial: bool = False) -> None:
        self.flag = Path(flag)
        self.error = error
        self.partial = partial

    def write(self, f: BinaryIO, data: bytes | memoryview) -> int:
        if self.flag.exists():
            if self.partial and len(data) > 1:
                f.write(data[: len(data) // 2])
                f.flush()
            raise OSError(self.error, f"{os.strerror(self.error)} (injected: {self.flag} exists)")
        return f.write(data)

    def fsync(self, fd: int) -> None:
        if self.flag.exists():
            raise OSError(self.error, f"{os.strerror(self.error)} (injected: {self.flag} exists)")
        os.fsync(fd)
