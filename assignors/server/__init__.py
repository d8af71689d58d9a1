"""assignors.server."""
