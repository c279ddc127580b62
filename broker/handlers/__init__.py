"""One module per API; each registers its handler with ``broker.registry.handles``."""
