"""actors.tools."""
