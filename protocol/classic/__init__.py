"""protocol.classic."""
