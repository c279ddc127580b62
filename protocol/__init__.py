"""Hourglass's sans-IO Kafka codec: framing, headers, message schemas and record formats.

Nothing in this package touches sockets, files or asyncio.
"""
