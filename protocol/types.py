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

# Kafka writes every string field with an int16 length: its generated serializers refuse a
# string of more than 32,767 bytes of UTF-8 ("'groupId' field is too long to be serialized")
# and its parsers one that claims more. Cohort bounds every string of a request the same way
# (group ids, member ids, instance ids, topic names, racks, assignor names, metadata).
MAX_STRING_BYTES = 32_767
# The same bound in characters: a UTF-8 character takes at least one byte, so a string of more
# characters is too long before it is encoded (the cheap first test).
MAX_STRING_CHARS = MAX_STRING_BYTES
# Bound on any array in a request, so a hostile request cannot make a partition allocate
# without limit. A 100,000-partition assignment fits comfortably.
MAX_ARRAY_LEN = 1_000_000
# Bound on all the entries of one request together (every list, at every depth). Kafka bounds
# a request by its size on the wire (socket.request.max.bytes, 100 MiB); a request reaches a
# Cohort partition already decoded, so the bound is said in entries: a partition applies a
# request within one turn, and a million entries is seconds of its time, beyond which the
# other groups it owns would miss heartbeats. A commit of 100,000 partitions is 100,001.
MAX_REQUEST_ENTRIES = 1_000_000
