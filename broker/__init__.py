"""Hourglass broker: the asyncio shell that wires ``protocol`` and ``storage`` together."""
__version__ = "0.1.0"
