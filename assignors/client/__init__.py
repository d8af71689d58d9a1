"""Client-side assignors: the seed-004 interfaces, the version-range rule, consumer assignors.

* :mod:`assignors.client.interfaces` — the ``Assignor`` / ``PartitionAssignor`` /
  ``ConnectAssignor`` interfaces and the group and assignment shapes they exchange with the
  coordinator (PrepareAssignment in, InstallAssignment out).
* :mod:`assignors.client.version_range` — which member runs the assignor, and at which
  metadata version it answers each member.
* :mod:`assignors.client.sticky` — ``StickyPartitionAssignor``, a consumer's client-side
  assignor: balanced, and partitions stay where they are.

Connect's assignor implements ``ConnectAssignor`` but lives in :mod:`assignors.connect`.
"""
