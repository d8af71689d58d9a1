"""Online migration between the protocols: converting a classic group to a consumer group and
back (``conversion``, seed 002) with the classic members a converted group keeps hosting until
they too restart with the new protocol (``classic_members``); and the same for Kafka Connect
(seed 004): a classic Connect group to the ``connect`` group type and back
(``connect_conversion``), with its classic workers (``connect_classic_members``).

Both migrations run on the same two pieces, generic over the group type: ``conversion_driver``
(the upgrade and downgrade path) and ``classic_in_modern`` (classic members inside a modern
group); the four modules above only name what is their type's own."""
