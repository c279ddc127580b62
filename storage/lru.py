"""Which open files to close: least recently used first, never one in use (pure, no I/O).

``PinnedLru`` is the bookkeeping of ``storage.files.FileCache``: keys in least-recently-used
order, each with a pin count (reads and writes in flight on it). ``evict(capacity)`` names
the keys to close so that at most ``capacity`` stay open, oldest first, skipping pinned
ones; when too many are pinned it evicts every unpinned key and the set stays above
capacity until pins are released (an in-flight read is never cut short).

Kafka holds one descriptor per segment and maps its indexes lazily (``LazyIndex``); it has no
such cache because the JVM brokers it runs on are given huge limits. Hourglass runs on
laptops and CI boxes with ``ulimit -n 1024``, hence the bound.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Iterator


class PinnedLru:
    """Keys in recency order (oldest first) with pin counts.

    Invariants: every key appears once; ``pins(k) >= 0``; ``touch``/``pin``/``add`` make a
    key the most recent; ``evict`` removes only keys with no pins, oldest first, and stops
    as soon as ``len(self) <= capacity``.
    """

    __slots__ = ("_order",)

    def __init__(self) -> None:
        self._order: OrderedDict[Hashable, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key) -> bool:
        return key in self._order

    def __iter__(self) -> Iterator:
        """Keys, least recently used first."""
        return iter(self._order)

    def add(self, key, pins: int = 0) -> None:
        """A newly opened key, the most recent; ``ValueError`` if already present."""
        if key in self._order:
            raise ValueError(f"{key!r} is already in the cache")
        self._order[key] = pins

    def touch(self, key) -> None:
        self._order.move_to_end(key)

    def pin(self, key) -> None:
        """One more use in flight; also makes the key the most recent."""
        order = self._order
        order[key] += 1
        order.move_to_end(key)

    def unpin(self, key) -> int:
        """One use fewer; returns the pins left (``ValueError`` below zero)."""
        n = self._order[key] - 1
        if n < 0:
            raise ValueError(f"{key!r} is not pinned")
        self._order[key] = n
        return n

    def pins(self, key) -> int:
        return self._order[key]

    def discard(self, key) -> None:
        self._order.pop(key, None)

    def pinned(self) -> int:
        """How many keys are pinned now."""
        return sum(1 for n in self._order.values() if n)

    def evict(self, capacity: int) -> list:
        """Remove and return the least recently used unpinned keys until at most
        ``capacity`` remain (or none unpinned is left)."""
        excess = len(self._order) - max(capacity, 0)
        if excess <= 0:
            return []
        out = []
        for key, n in self._order.items():
            if not n:
                out.append(key)
                if len(out) == excess:
                    break
        for key in out:
            del self._order[key]
        return out


__all__ = ["PinnedLru"]
