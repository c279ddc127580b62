"""Hourglass for embedding: ``EmbeddedBroker`` and the pytest plugin (``hourglass.testing``)."""
from hourglass.embedded import EmbeddedBroker

__all__ = ["EmbeddedBroker"]
