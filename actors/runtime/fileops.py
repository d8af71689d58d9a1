"""The partition log's boundary with the disk.

Everything the log writes goes through a ``FileOps``: ``write`` and ``fsync`` are where a full
disk (ENOSPC) or a failing device (EIO) shows up. Replacing it is how the tests (their
``FlagFileFaults``, in ``tests/actors/runtime/faults.py``), and anyone rehearsing a disk fault
on a running cluster, make those calls fail without root or a real broken disk.
"""

from __future__ import annotations

import os
from typing import BinaryIO


class FileOps:
    """The real disk."""

    def write(self, f: BinaryIO, data: bytes | memoryview) -> int:
        return f.write(data)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)
