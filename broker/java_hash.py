"""Java's ``String.hashCode`` and ``HashMap`` iteration order, where Kafka's answers depend on
them: which partition of ``__consumer_offsets``/``__share_group_state`` a key lands in, and in
which order Kafka visits the names it put in a ``HashMap`` (the first refused feature of an
UpdateFeatures, the topics a Streams group status names)."""
from __future__ import annotations

from typing import Iterable


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around), signed."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def java_hash_order(names: Iterable[str]) -> list[str]:
    """The order ``new HashMap<String, ?>`` (or ``HashSet``) filled with ``names`` in this order
    iterates them: by bucket of the spread hash ``(h ^ h >>> 16) & (n - 1)``, then insertion
    order within a bucket (resizes keep it). A name put twice keeps its first place."""
    unique = list(dict.fromkeys(names))
    n = 16
    while len(unique) > n * 3 // 4:
        n *= 2

    def bucket(s: str) -> int:
        h = java_string_hash(s) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (n - 1)
    return [s for _, _, s in sorted((bucket(s), i, s) for i, s in enumerate(unique))]
