"""The Kafka wire gateway: unmodified Kafka clients join Cohort's groups through it.

``actor`` (the ``gateway`` Ray actor and its asyncio server), ``launch`` (start / stop),
``admission`` (the bound on open connections, Kafka's ``max.connections``), ``connection``
(one client: framing, SASL, in-order replies), ``dispatch`` (each API's coroutine, derived
from the one API table, ``protocol.api``), ``core`` (what handlers share: routing, caches,
authorization), ``group_handlers`` and ``topic_handlers`` (one coroutine per Kafka API),
``routing`` (``Cluster.call``'s routing and retries, awaited). The translation between
Kafka's messages and Cohort's is pure and lives in ``protocol/wire``; the security rules in
``protocol/security``.
"""
