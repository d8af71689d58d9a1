"""protocol.consumer."""
