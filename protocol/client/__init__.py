"""protocol.client."""
