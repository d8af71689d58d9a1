"""Cohort in front of an upstream Kafka-compatible cluster: the connections Cohort opens to it
(``link``), what it knows of the upstream's brokers (``view``), the per-connection relay of
data and topic APIs (``relay``), and the listener each upstream broker gets (``listeners``).

Forwarding is I/O, so it lives here, beside ``gateway/``; what rewrites a reply's addresses is
pure and lives in ``protocol/wire/upstream.py``.
"""
