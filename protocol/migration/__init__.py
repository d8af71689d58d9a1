"""Online migration between the protocols (seed 002): converting a classic group to a consumer
group and back (``conversion``), and the classic members a converted group keeps hosting until
they too restart with the new protocol (``classic_members``)."""
