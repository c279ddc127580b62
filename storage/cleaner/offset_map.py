"""The cleaner's key -> latest offset map (Kafka's ``OffsetMap`` / ``SkimpyOffsetMap``).

Keys are stored as their 16-byte MD5 digest, as Kafka does, so an entry has a fixed size
whatever the key length. The capacity follows Kafka's arithmetic exactly: a memory budget
(``log.cleaner.dedupe.buffer.size / log.cleaner.threads``) gives ``slots = memory // 24``
(16 bytes of hash + 8 bytes of offset per entry), and the cleaner stops adding keys once
``size >= slots * log.cleaner.io.buffer.load.factor``. Because the bound is the same entry
count as Kafka's, a dirty section too large for one pass is cleaned in the same passes
(rounds) Kafka would use. (CPython spends more than 24 bytes per dict entry; the bound is on
entries, not on the interpreter's bytes.)

Invariants: ``get`` returns the largest offset ``put`` for that key, -1 for an unknown key;
``latest_offset`` is the largest offset the cleaner has accounted for (a record put, or a
batch/segment end recorded with ``update_latest_offset``), -1 when empty. Offsets put for
one key only grow (the cleaner scans in offset order).
"""
from __future__ import annotations

HASH_SIZE = 16                      # MD5
BYTES_PER_ENTRY = HASH_SIZE + 8     # hash + int64 offset
DEFAULT_LOAD_FACTOR = 0.9           # log.cleaner.io.buffer.load.factor


def digest(key) -> bytes:
    return _md5(key).digest()


def _md5(key):
    # hashlib (with its OpenSSL binding) is imported on the first key hashed rather than at
    # every broker start; this function then replaces itself with hashlib's md5.
    global _md5
    from hashlib import md5
    _md5 = md5
    return md5(key)


class OffsetMap:
    """A bounded ``digest(key) -> offset`` map (see the module docstring)."""

    def __init__(self, memory: int, load_factor: float = DEFAULT_LOAD_FACTOR):
        if memory < BYTES_PER_ENTRY:
            raise ValueError(f"offset map memory {memory} is below one entry ({BYTES_PER_ENTRY} bytes)")
        self.memory = memory
        self.slots = memory // BYTES_PER_ENTRY
        self.load_factor = load_factor
        if self.slots * load_factor <= 1:
            raise ValueError("offset map is too small to fit in even a single message, so log cleaning "
                             "will never make progress; increase log.cleaner.dedupe.buffer.size or "
                             "decrease log.cleaner.threads")
        self._map: dict[bytes, int] = {}
        self._latest = -1

    @property
    def max_desired_size(self) -> int:
        """Entries allowed before the map counts as full (Kafka ``slots * dupBufferLoadFactor``)."""
        return int(self.slots * self.load_factor)

    @property
    def size(self) -> int:
        return len(self._map)

    def __len__(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.max_desired_size

    def put(self, key, offset: int) -> None:
        self.put_digest(digest(key), offset)

    def put_digest(self, d: bytes, offset: int) -> None:
        self._map[d] = offset
        if offset > self._latest:
            self._latest = offset

    def get(self, key) -> int:
        return self._map.get(digest(key), -1)

    def get_digest(self, d: bytes) -> int:
        return self._map.get(d, -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self._latest:
            self._latest = offset

    @property
    def latest_offset(self) -> int:
        return self._latest

    def clear(self) -> None:
        self._map.clear()
        self._latest = -1

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots


__all__ = ["OffsetMap", "digest", "HASH_SIZE", "BYTES_PER_ENTRY", "DEFAULT_LOAD_FACTOR"]
