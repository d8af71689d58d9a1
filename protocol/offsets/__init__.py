"""protocol.offsets.rules."""
