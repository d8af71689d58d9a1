"""assignors.client.interfaces."""
