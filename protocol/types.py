"""Wire-level field types shared by messages and records.

Kafka's schemas say ``int8``/``int16``/``int32``/``int64``; Python has one ``int``. The
``Annotated`` aliases carry the width so that a single validator (``protocol.validation``)
can refuse an out-of-range value with INVALID_REQUEST instead of letting it reach the rules.
"""

from __future__ import annotations

from typing import Annotated

Int8 = Annotated[int, "int8"]
Int16 = Annotated[int, "int16"]
Int32 = Annotated[int, "int32"]
Int64 = Annotated[int, "int64"]

INT_BOUNDS: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Kafka encodes strings with an int16 length (compact strings allow more, but no group id,
# member id or topic name legitimately comes near this); a longer one is refused.
MAX_STRING_CHARS = 32_767
# Bound on any array in a request, so a hostile request cannot make a partition allocate
# without limit. A 100,000-partition assignment fits comfortably.
MAX_ARRAY_LEN = 1_000_000
