"""actors.runtime."""
