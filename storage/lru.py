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
from typing import Callable, Hashable, Iterator


class PinnedLru:
    """Keys in recency order (oldest first); pin counts are read through ``pins_of``.

    Invariants: every key appears once; ``add``/``touch`` make a key the most recent;
    ``evict(capacity)`` removes only keys with ``pins_of(key) == 0``, oldest first, and stops
    as soon as ``len(self) <= capacity``.

    The pin counts live with their owners (``CachedFile.pins``), so releasing a pin is one
    attribute write on the hot path; the eviction choice still sees them all.
    """

    __slots__ = ("_order", "_pins_of")

    def __init__(self, pins_of: Callable[[Hashable], int]) -> None:
        self._order: OrderedDict[Hashable, None] = OrderedDict()
        self._pins_of = pins_of

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, key) -> bool:
        return key in self._order

    def __iter__(self) -> Iterator:
        """Keys, least recently used first."""
        return iter(self._order)

    def add(self, key) -> None:
        """A newly opened key, the most recent; ``ValueError`` if already present."""
        if key in self._order:
            raise ValueError(f"{key!r} is already in the cache")
        self._order[key] = None

    def touch(self, key) -> None:
        self._order.move_to_end(key)

    def discard(self, key) -> None:
        self._order.pop(key, None)

    def pinned(self) -> int:
        """How many keys are pinned now."""
        pins_of = self._pins_of
        return sum(1 for k in self._order if pins_of(k))

    def evict(self, capacity: int) -> list:
        """Remove and return the least recently used unpinned keys until at most
        ``capacity`` remain (or none unpinned is left)."""
        excess = len(self._order) - max(capacity, 0)
        if excess <= 0:
            return []
        pins_of = self._pins_of
        out = []
        for key in self._order:
            if not pins_of(key):
                out.append(key)
                if len(out) == excess:
                    break
        for key in out:
            del self._order[key]
        return out


__all__ = ["PinnedLru"]
