"""Classic groups (JoinGroup/SyncGroup, seed 003, KIP-345 static members, KIP-800 join reasons):
the group and its states as data (``group``, ``states``), the rules by concept (``join``,
``sync``, ``membership``, ``rebalance``, ``load``) behind ``rules.ClassicGroupRules``, the
"consumer" embedded protocol's bytes (``consumer_protocol``), timer keys and messages."""
