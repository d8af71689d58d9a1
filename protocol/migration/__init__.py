"""protocol.migration.conversion."""
