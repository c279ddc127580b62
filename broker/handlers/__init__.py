"""One module per API; each registers its handler with ``broker.registry.handles``."""


def once_per_key(items, key):
    """Yield ``(item, duplicated)`` in request order, each key once: Kafka's admin APIs answer a
    name (or id, or resource) given twice with one INVALID_REQUEST and drop its repeats."""
    counts: dict = {}
    for it in items:
        k = key(it)
        counts[k] = counts.get(k, 0) + 1
    seen: set = set()
    for it in items:
        k = key(it)
        if k in seen:
            continue
        seen.add(k)
        yield it, counts[k] > 1
