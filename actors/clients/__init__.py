"""actors.clients."""
