"""The durable client quotas: ``{entity: {key: value}}`` in ``.hourglass/client-quotas.json``.

Like the ACLs and SCRAM users, the whole (small) set is rewritten with ``atomic_write``
(temp file, fsync, rename, fsync of the directory) after every accepted change, so a kill -9
leaves either the old or the new set, never a torn one.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable

from broker.quotas.entities import Entity

log = logging.getLogger(__name__)


class QuotaStore:
    FILE = "client-quotas.json"

    def __init__(self, directory: Path | None):
        self.path = None if directory is None else Path(directory) / self.FILE
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.listeners: list[Callable[[], None]] = []
        if self.path is not None:
            self._load()

    def _load(self) -> None:
        try:
            doc = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        for e in doc.get("entities", []):
            ent = tuple(sorted((t, n) for t, n in e["entity"]))
            self.quotas[ent] = {k: float(v) for k, v in e["quotas"].items()}
        if self.quotas:
            log.info("loaded client quotas for %d entit%s from %s", len(self.quotas),
                     "y" if len(self.quotas) == 1 else "ies", self.path)

    def apply(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        """Apply {entity: {key: value, or None to remove}} at once, then one durable write."""
        for ent, change in changes.items():
            q = self.quotas.setdefault(ent, {})
            for k, v in change.items():
                if v is None:
                    q.pop(k, None)
                else:
                    q[k] = v
            if not q:
                del self.quotas[ent]
        self.save()
        for fn in self.listeners:
            fn()

    def save(self) -> None:
        if self.path is None:
            return
        from broker.cluster import atomic_write
        doc = {"version": 1, "entities": [
            {"entity": [list(p) for p in ent], "quotas": dict(sorted(q.items()))}
            for ent, q in sorted(self.quotas.items(), key=lambda kv: [(t, n or "") for t, n in kv[0]])]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps(doc, indent=1).encode())
