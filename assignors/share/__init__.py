"""Share groups' assignors (KIP-932): ``simple``, the one Kafka ships."""

from assignors.share.simple import NAME, assign_simple

__all__ = ["NAME", "assign_simple"]
