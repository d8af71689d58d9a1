"""Server-side assignors, run by the coordinator (seed 000): ``uniform`` (the default: balanced
±1, sticky) and ``range`` (co-partitioned, sticky), both rack aware through ``racks``.
``assignors.SERVER_ASSIGNORS`` is their registry."""
