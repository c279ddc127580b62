"""The registry's state, kept in the compacted ``_schemas`` topic (``kafkastore.topic``).

The log is the only truth: every change is one batch of Confluent's records
(``schema_registry.records``) built with ``protocol.records.build_batch`` and appended through
the topic's ``PartitionLog`` (the path a produce takes); the in-memory state is then brought
up to the log end by the same ``apply`` that replays the topic at start. Records that other
writers append (a plain producer, a data dir written by Confluent's registry) are picked up by
``catch_up()`` before every request, exactly like Confluent's reader thread.

Replay (``load``) runs in the background when the service starts; requests wait for it
(``ready``). It pages through the log and yields to the event loop between chunks.

Ids: global, the highest id ever seen in the topic plus one (Confluent's incremental id
generator). A permanent delete also writes a NOOP record carrying ``{"maxId": N}`` (Confluent's
reader skips NOOP records), so an id stays spent after compaction has dropped the deleted
schema's record, across restarts and kill -9 (appends reach the segment file before the
request is answered).

Every mutating method checks, then appends, with no ``await`` in between: on the broker's one
event loop that makes each registration atomic.

``asOf`` reads each version's registration time from the timestamp of its first live record
and its deletion time from the soft delete's record. Once compaction has replaced a
soft-deleted version's registration record, only its deletion time is known and ``asOf`` no
longer answers it (live versions keep their registration record).
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import uuid
import logging
from dataclasses import dataclass, field
from typing import Any

from broker.groups.internal_topics import read_batches
from protocol.records.record import build_batch
from schema_registry import associations as A
from schema_registry import records as R
from schema_registry.compatibility import DEFAULT_LEVEL, LEVELS, check
from schema_registry.errors import (
    RegistryError, incompatible, invalid_schema, not_permitted, reference_exists, schema_not_found,
    subject_not_found, subject_not_soft_deleted, subject_soft_deleted, version_not_found,
    version_not_soft_deleted, version_soft_deleted,
)
from schema_registry.formats import ParsedSchema, SchemaError, parse_schema

log = logging.getLogger(__name__)

# READONLY_OVERRIDE: deprecated in Confluent's registry and still accepted, a read-only mode
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
READ_ONLY_MODES = ("READONLY", "READONLY_OVERRIDE")
CONTEXT = "."  # the default context, as Confluent names it in messages


@dataclass
class VersionEntry:
    """One (subject, version): the content of its latest SCHEMA record plus the record times
    that ``asOf`` reads (registered: first live record; deleted: the soft delete)."""
    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: list[dict]
    metadata: Any = None
    rule_set: Any = None
    deleted: bool = False
    registered_ts: int | None = None
    deleted_ts: int | None = None

    def content_key(self) -> tuple:
        return content_key(self.schema_type, self.schema, self.references, self.metadata, self.rule_set)

    @functools.cached_property
    def guid(self) -> str:
        return schema_guid(self.schema, self.references, self.metadata, self.rule_set)

    def as_json(self, *, with_subject: bool = True) -> dict:
        d: dict[str, Any] = {}
        if with_subject:
            d["subject"] = self.subject
            d["version"] = self.version
        d["id"] = self.id
        d["guid"] = self.guid
        if self.schema_type != "AVRO":
            d["schemaType"] = self.schema_type
        if self.references:
            d["references"] = self.references
        if self.metadata:
            d["metadata"] = self.metadata
        if self.rule_set:
            d["ruleSet"] = self.rule_set
        d["schema"] = self.schema
        return d


def schema_guid(schema: str, references, metadata=None, rule_set=None) -> str:
    """Confluent's schema GUID: the MD5 of the schema text (UTF-8) and each reference's name,
    subject and big-endian version, as a UUID (``Schema.updateHash``). Metadata and rule sets
    are hashed here as a marker byte and their sorted JSON, an approximation of Confluent's
    field-by-field hash: a schema carrying them may get another GUID than Confluent gives it."""
    md = hashlib.md5(schema.encode("utf-8"))
    for r in references or ():
        for k in ("name", "subject"):
            if r.get(k) is not None:
                md.update(str(r[k]).encode("utf-8"))
        if r.get("version") is not None:
            md.update(int(r["version"]).to_bytes(4, "big", signed=True))
    for extra in (metadata, rule_set):
        if extra is not None:
            md.update(b"\x01" + json.dumps(extra, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    return str(uuid.UUID(bytes=md.digest()))


def content_key(schema_type, schema, references, metadata, rule_set) -> tuple:
    refs = tuple((r.get("name"), r.get("subject"), r.get("version")) for r in references or ())
    return (schema_type or "AVRO", schema, refs,
            json.dumps(metadata, sort_keys=True) if metadata else None,
            json.dumps(rule_set, sort_keys=True) if rule_set else None)


@dataclass
class RegistryState:
    """What the records say, replayed in log order (``apply``). Plain data."""
    subjects: dict[str, dict[int, VersionEntry]] = field(default_factory=dict)
    ids: dict[int, dict[tuple[str, int], VersionEntry]] = field(default_factory=dict)
    by_content: dict[tuple, int] = field(default_factory=dict)
    configs: dict[str | None, dict] = field(default_factory=dict)  # None: global
    modes: dict[str | None, str] = field(default_factory=dict)
    associations: dict[tuple, A.Association] = field(default_factory=dict)  # by Association.key()
    max_id: int = 0
    records: int = 0

    def apply(self, key: bytes | None, value: bytes | None, ts: int) -> None:
        if key is None:
            return
        try:
            k = R.decode_key(key)
            v = R.decode_value(value)
        except (ValueError, UnicodeDecodeError) as exc:
            log.error("skipping an undecodable _schemas record: %s", exc)
            return
        self.records += 1
        if k.keytype == R.SCHEMA:
            self._apply_schema(k.subject, k.version, v, ts)
        elif k.keytype == R.CONFIG:
            if v is None:
                self.configs.pop(k.subject, None)
            else:
                self.configs[k.subject] = {f: v[f] for f in R.CONFIG_FIELDS if f in v}
        elif k.keytype == R.MODE:
            if v is None:
                self.modes.pop(k.subject, None)
            else:
                self.modes[k.subject] = v.get("mode", "READWRITE")
        elif k.keytype == R.DELETE_SUBJECT and v is not None:
            upto = v.get("version") or 0
            for e in self.subjects.get(k.subject, {}).values():
                if e.version <= upto and not e.deleted:
                    e.deleted, e.deleted_ts = True, ts
        elif k.keytype == R.CLEAR_SUBJECT and v is not None:
            for e in list(self.subjects.get(k.subject, {}).values()):
                if e.deleted:
                    self._remove(e)
        elif k.keytype == R.ASSOC:
            f = k.fields or {}
            key = (f.get("resourceName"), f.get("resourceNamespace"), f.get("resourceType"),
                   f.get("associationType"), f.get("subject"))
            if v is None:
                self.associations.pop(key, None)
            else:
                old = self.associations.get(key)
                self.associations[key] = A.Association(
                    v.get("guid", ""), v.get("resourceName"), v.get("resourceNamespace"), v.get("resourceId"),
                    v.get("resourceType"), v.get("associationType"), v.get("subject"), v.get("lifecycle") or A.WEAK,
                    bool(v.get("frozen")), v.get("createTs", old.create_ts if old is not None else None), ts)
        elif k.keytype == R.NOOP and isinstance(v, dict):
            self.max_id = max(self.max_id, int(v.get("maxId") or 0))

    def _apply_schema(self, subject: str, version: int, v: dict | None, ts: int) -> None:
        versions = self.subjects.setdefault(subject, {})
        old = versions.get(version)
        if v is None:  # permanent delete
            if old is not None:
                self._remove(old)
            if not versions:
                self.subjects.pop(subject, None)
            return
        sid = int(v["id"])
        self.max_id = max(self.max_id, sid)
        e = VersionEntry(subject, version, sid, v.get("schemaType") or "AVRO", v["schema"],
                         list(v.get("references") or []), v.get("metadata"), v.get("ruleSet"),
                         bool(v.get("deleted")))
        if old is not None:
            e.registered_ts = old.registered_ts
            e.deleted_ts = old.deleted_ts
            if old.id != sid or old.content_key() != e.content_key():
                self._remove(old)
                versions[version] = e
        if e.deleted:
            e.deleted_ts = e.deleted_ts if old is not None and old.deleted else ts
        else:
            e.deleted_ts = None
            if e.registered_ts is None:
                e.registered_ts = ts
        versions[version] = e
        self.ids.setdefault(sid, {})[(subject, version)] = e
        self.by_content.setdefault(e.content_key(), sid)

    def _remove(self, e: VersionEntry) -> None:
        self.subjects.get(e.subject, {}).pop(e.version, None)
        holders = self.ids.get(e.id)
        if holders is not None:
            holders.pop((e.subject, e.version), None)
            if not holders:
                del self.ids[e.id]
                self.by_content = {k: i for k, i in self.by_content.items() if i != e.id}


class SchemaStore:
    """The registry over ``_schemas``: reads answer from memory, writes append to the log."""

    def __init__(self, broker, topic: str = "_schemas", default_level: str = DEFAULT_LEVEL):
        self.broker = broker
        self.topic = topic
        self.default_level = default_level
        self.state = RegistryState()
        self.next_offset = 0
        self.ready = asyncio.Event()
        self.load_error: BaseException | None = None
        self._parsed: dict[tuple, ParsedSchema] = {}

    # ---- the log ------------------------------------------------------------------------------
    def _plog(self):
        topics = self.broker.topics
        if topics.get(self.topic) is None:
            topics.create_topic(self.topic, 1, 1, {"cleanup.policy": "compact"})
            log.info("created %s (compacted, 1 partition)", self.topic)
        plog = topics.log(self.topic, 0)
        if plog is None:
            raise RuntimeError(f"{self.topic}-0 is not open")
        return plog

    def _read_from(self, plog, upto: int | None = None):
        """(timestamp, key, value) of the records from ``next_offset`` on, advancing it."""
        if self.next_offset < plog.log_start_offset:
            self.next_offset = plog.log_start_offset
        end = plog.log_end_offset if upto is None else upto
        if self.next_offset >= end:
            return
        start = self.next_offset
        for h, recs in read_batches(plog, start, end):
            recs = [r for r in recs if r.offset >= start]
            self.next_offset = h.next_offset
            if h.is_control:
                continue
            for r in recs:
                yield r.timestamp, r.key, r.value

    def catch_up(self) -> None:
        """Apply what was appended since the last look (normally nothing)."""
        plog = self._plog()
        for ts, k, v in self._read_from(plog):
            self.state.apply(k, v, ts)

    async def load(self) -> None:
        """Replay the whole topic, yielding to the loop between chunks; then ``ready``."""
        try:
            plog = self._plog()
            end = plog.log_end_offset
            n = 0
            for ts, k, v in self._read_from(plog, end):
                self.state.apply(k, v, ts)
                n += 1
                if n % 500 == 0:
                    await asyncio.sleep(0)
            self.catch_up()
            log.info("schema registry loaded %d record(s) from %s: %d subject(s), %d schema id(s)",
                     n, self.topic, len(self.state.subjects), len(self.state.ids))
        except Exception as exc:  # answered 50001 by every request
            self.load_error = exc
            log.exception("schema registry failed to load %s", self.topic)
        finally:
            self.ready.set()

    def _append(self, recs: list[tuple[bytes, bytes | None]]) -> None:
        plog = self._plog()
        self.catch_up()
        now = self.broker.clock.now_ms()
        plog.append(build_batch([(k, v, now) for k, v in recs]), from_client=False)
        self.catch_up()

    # ---- reads used by produce validation (the contract) -------------------------------------
    def registered_ids(self, subject: str) -> set[int]:
        """Ids of the subject's live (not deleted) versions."""
        return {e.id for e in self.state.subjects.get(subject, {}).values() if not e.deleted}

    def schema_by_guid(self, guid: str) -> VersionEntry | None:
        for holders in self.state.ids.values():
            for e in holders.values():
                if e.guid == guid:
                    return e
        return None

    def schema_by_id(self, schema_id: int) -> VersionEntry | None:
        holders = self.state.ids.get(schema_id)
        if not holders:
            return None
        return min(holders.values(), key=lambda e: (e.deleted, e.subject, e.version))

    # ---- reads --------------------------------------------------------------------------------
    def subjects(self, *, deleted: bool = False, prefix: str = "") -> list[str]:
        out = []
        for s, versions in self.state.subjects.items():
            if not s.startswith(prefix):
                continue
            if any(deleted or not e.deleted for e in versions.values()):
                out.append(s)
        return sorted(out)

    def _versions(self, subject: str) -> dict[int, VersionEntry]:
        versions = self.state.subjects.get(subject)
        if not versions:
            raise subject_not_found(subject)
        return versions

    def versions(self, subject: str, *, deleted: bool = False) -> list[VersionEntry]:
        versions = self._versions(subject)
        out = [e for v, e in sorted(versions.items()) if deleted or not e.deleted]
        if not out:
            raise subject_not_found(subject)
        return out

    def version_as_of(self, subject: str, at_ms: int) -> VersionEntry:
        """The version that was latest at ``at_ms`` by the records' own timestamps: registered
        at or before it and not yet deleted then."""
        versions = self._versions(subject)
        live = [e for e in versions.values() if e.registered_ts is not None and e.registered_ts <= at_ms
                and (e.deleted_ts is None or e.deleted_ts > at_ms)]
        if not live:
            raise version_not_found(f"latest as of {at_ms}")
        return max(live, key=lambda e: e.version)

    def get_version(self, subject: str, version: str | int, *, deleted: bool = False) -> VersionEntry:
        versions = self._versions(subject)
        if version == "latest" or version == -1:
            live = [e for e in versions.values() if deleted or not e.deleted]
            if not live:
                raise subject_not_found(subject)
            return max(live, key=lambda e: e.version)
        e = versions.get(int(version))
        if e is None or (e.deleted and not deleted):
            raise version_not_found(version)
        return e

    def referenced_by(self, subject: str, version: int, *, deleted: bool = False) -> list[int]:
        ids = set()
        for versions in self.state.subjects.values():
            for e in versions.values():
                if (deleted or not e.deleted) and any(
                        r.get("subject") == subject and r.get("version") == version for r in e.references):
                    ids.add(e.id)
        return sorted(ids)

    def config(self, subject: str | None) -> dict | None:
        return self.state.configs.get(subject)

    def level(self, subject: str | None) -> str:
        for scope in (subject, None):
            c = self.state.configs.get(scope)
            if c and c.get("compatibilityLevel"):
                return c["compatibilityLevel"]
        return self.default_level

    def policy(self, subject: str | None) -> str:
        """Confluent's ``compatibilityPolicy`` in scope (STRICT or LENIENT; STRICT when unset)."""
        for scope in (subject, None):
            c = self.state.configs.get(scope)
            if c and isinstance(c.get("compatibilityPolicy"), str):
                return c["compatibilityPolicy"].upper()
        return "STRICT"

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.modes.get(None, "READWRITE")

    # ---- parsing ------------------------------------------------------------------------------
    def resolve_references(self, references: list[dict]) -> dict[str, str]:
        """name -> schema text for every reference, dependencies first (transitively)."""
        out: dict[str, str] = {}

        def visit(refs, depth):
            if depth > 32:
                raise invalid_schema("Too many levels of schema references")
            for r in refs or ():
                if not isinstance(r, dict) or not r.get("name") or not r.get("subject"):
                    raise invalid_schema(f"Invalid schema reference {r!r}")
                try:
                    e = self.get_version(r["subject"], r.get("version", -1) if r.get("version") != -1 else "latest")
                except RegistryError:
                    raise invalid_schema(f"Invalid schema reference {r['name']}: subject {r['subject']} "
                                         f"version {r.get('version')} not found") from None
                visit(e.references, depth + 1)
                out.setdefault(r["name"], e.schema)

        visit(references, 0)
        return out

    def parse(self, schema_type: str, text: str, references: list[dict], *, new: bool = True) -> ParsedSchema:
        """``new=False`` for a stored version: parsed as Confluent parses what it already holds
        (``parse_schema``), so a schema an older registry accepted never breaks later requests."""
        key = (schema_type, text, tuple((r.get("name"), r.get("subject"), r.get("version"))
                                        for r in references or ()), new)
        parsed = self._parsed.get(key)
        if parsed is None:
            try:
                parsed = parse_schema(schema_type, text, self.resolve_references(references), new=new)
            except SchemaError as exc:
                raise invalid_schema(str(exc)) from None
            if len(self._parsed) > 10000:
                self._parsed.clear()
            self._parsed[key] = parsed
        return parsed

    def parsed_entry(self, e: VersionEntry) -> ParsedSchema:
        return self.parse(e.schema_type, e.schema, e.references, new=False)

    # ---- lookup -------------------------------------------------------------------------------
    def prepare(self, subject: str, body: dict, normalize: bool) -> tuple[ParsedSchema, str, str, list]:
        check_request(body)
        schema_type = (body.get("schemaType") or "AVRO").upper()
        references = body.get("references") or []
        parsed = self.parse(schema_type, body.get("schema"), references)
        configured = next((c["normalize"] for c in (self.state.configs.get(subject), self.state.configs.get(None))
                           if c and c.get("normalize") is not None), False)
        if normalize or configured:
            text = parsed.normalized()
        else:
            text = parsed.canonical()
        return parsed, schema_type, text, references

    def lookup(self, subject: str, body: dict, *, normalize: bool = False, deleted: bool = False) -> VersionEntry:
        versions = self._versions(subject)
        if not deleted and all(e.deleted for e in versions.values()):
            raise subject_not_found(subject)
        _, schema_type, text, refs = self.prepare(subject, body, normalize)
        key = content_key(schema_type, text, refs, body.get("metadata"), body.get("ruleSet"))
        matches = [e for e in versions.values() if (deleted or not e.deleted) and self._same(e, key, 3)]
        if not matches:
            raise schema_not_found()
        return max(matches, key=lambda e: e.version)

    def _same(self, e: VersionEntry, key: tuple, parts: int = 5) -> bool:
        """``e`` holds the schema ``key`` names: the same stored text, or (an AVRO or PROTOBUF
        text kept before the registry wrote today's canonical layout) the same text once
        canonicalized again."""
        mine = e.content_key()
        if mine[:parts] == key[:parts]:
            return True
        if e.schema_type not in ("AVRO", "PROTOBUF") or mine[0] != key[0] or mine[2:parts] != key[2:parts]:
            return False
        try:
            return self.parsed_entry(e).canonical() == key[1]
        except RegistryError:
            return False

    # ---- writes -------------------------------------------------------------------------------
    def register(self, subject: str, body: dict, *, normalize: bool = False) -> VersionEntry:
        check_request(body)
        self.catch_up()
        req_id = body.get("id")
        req_id = -1 if req_id is None else int(req_id)
        req_version = int(body.get("version") or 0)
        mode = self.mode(subject)
        if mode in READ_ONLY_MODES:
            raise not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")
        if req_id >= 0 and mode != "IMPORT":
            raise not_permitted(f"Subject {subject} in context {CONTEXT} is not in import mode")
        if req_id < 0 and mode != "READWRITE":
            raise not_permitted(f"Subject {subject} in context {CONTEXT} is not in read-write mode")
        parsed, schema_type, text, refs = self.prepare(subject, body, normalize)
        metadata, rule_set = body.get("metadata"), body.get("ruleSet")
        key = content_key(schema_type, text, refs, metadata, rule_set)
        versions = self.state.subjects.get(subject, {})
        live = [e for _, e in sorted(versions.items()) if not e.deleted]
        for e in reversed(live):
            if self._same(e, key) and (req_id < 0 or req_id == e.id):
                return e
        schema_id = self.state.by_content.get(key, -1)
        if req_id >= 0:
            holders = self.state.ids.get(req_id)
            if holders and schema_id != req_id:
                raise not_permitted(f"Overwrite new schema with id {req_id} in context {CONTEXT} is not permitted.")
            schema_id = req_id
        if mode != "IMPORT":
            errors = check(parsed, [self.parsed_entry(e) for e in live], self.level(subject), self.policy(subject))
            if errors:
                raise incompatible(subject, errors, live[-1] if live else None, self.level(subject))
        version = max(versions, default=0) + 1
        if req_version > 0:
            if mode != "IMPORT" and req_version != version:
                raise invalid_schema("Version is not one more than previous version")
            if req_version in versions and not versions[req_version].deleted:
                raise not_permitted(f"Overwrite new schema with version {req_version} is not permitted.")
            version = req_version
        if schema_id < 0:
            schema_id = self.state.max_id + 1
        self._append([(R.schema_key(subject, version),
                       R.schema_value(subject, version, schema_id, schema_type, text, refs, metadata, rule_set))])
        return self.state.subjects[subject][version]

    def _tagged_text(self, schema_type: str, text: str, parsed: ParsedSchema, req) -> str:
        """``text`` (``parsed``'s canonical form) with the TagRequest's tags edited in."""
        from schema_registry import tags as T
        try:
            if schema_type == "AVRO":
                return T.avro_tagged(text, req)
            if schema_type == "JSON":
                return T.json_tagged(text, req)
            from schema_registry.formats.protobuf import render
            return render(T.proto_tagged(parsed.fdp, req), option_classes=parsed.option_classes)
        except (ValueError, TypeError, AttributeError) as exc:
            raise invalid_schema(f"java.lang.IllegalArgumentException: {exc}") from None

    def register_with_tags(self, subject: str, body: dict, *, normalize: bool = False) -> VersionEntry:
        """A registration carrying ``schemaTagsToAdd``/``schemaTagsToRemove`` or
        ``propagateSchemaTags`` (Confluent's ``RegisterSchemaRequest``): the tags are edited
        into the schema (with ``propagateSchemaTags``, the latest version's tags too, by their
        paths); as Confluent's registration, a missing ``metadata``/``ruleSet`` is the latest
        version's, and ``confluent:version`` is set to the new version's number when tags were
        given, a ``version`` was given, or the metadata already has one. With tags to add or
        remove the answer is always a new version."""
        from schema_registry import tags as T
        check_request(body)
        self.catch_up()
        req = T.TagRequest(to_add=T._entity_tags(body.get("schemaTagsToAdd"), "schemaTagsToAdd"),
                           to_remove=T._entity_tags(body.get("schemaTagsToRemove"), "schemaTagsToRemove"))
        schema_type = (body.get("schemaType") or "AVRO").upper()
        references = body.get("references") or []
        parsed = self.parse(schema_type, body["schema"], references)
        text = parsed.canonical()
        has_tags = bool(req.to_add or req.to_remove)
        if has_tags:
            text = self._tagged_text(schema_type, text, parsed, req)
        versions = self.state.subjects.get(subject, {})
        live = [e for _, e in sorted(versions.items()) if not e.deleted]
        previous = live[-1] if live else None
        if body.get("propagateSchemaTags") is True and previous is not None:
            found = T.find_tags(self.parsed_entry(previous), ["*"])
            if found:
                carried = T.TagRequest(to_add=T._entity_tags(found, "schemaTags"))
                text = self._tagged_text(schema_type, text, self.parse(schema_type, text, references), carried)
        metadata = body.get("metadata")
        if metadata is None and previous is not None:
            metadata = previous.metadata
        rule_set = body.get("ruleSet")
        if rule_set is None and previous is not None:
            rule_set = previous.rule_set
        version = int(body.get("version") or 0)
        if has_tags or version != 0 or T.CONFLUENT_VERSION in ((metadata or {}).get("properties") or {}):
            metadata = T.with_confluent_version(metadata, max(versions, default=0) + 1)
        out = {k: v for k, v in body.items() if k not in ("schemaTagsToAdd", "schemaTagsToRemove",
                                                            "propagateSchemaTags")}
        out.update(schema=text, metadata=metadata, ruleSet=rule_set)
        return self.register(subject, out, normalize=normalize)

    def modify_tags(self, subject: str, version: str | int, req) -> VersionEntry:
        """Confluent's ``modifySchemaTags``: a new version of ``subject`` whose schema is the
        given version's with the ``TagRequest``'s tags edited in, registered as any other
        (mode, compatibility, the next version number; ``newVersion``, when given, must be that
        number: 42201 otherwise). Its metadata is the request's or the tagged version's, with
        ``confluent:version`` set to the new version's number; its rule set the request's
        ``ruleSet``, or ``rulesToMerge``/``rulesToRemove`` applied to the rule set of version
        ``newVersion - 1`` (the latest without ``newVersion``), or else the latest version's."""
        from schema_registry import tags as T
        self.catch_up()
        base = self.get_version(subject, version)
        T.check_rules(req)
        text = self._tagged_text(base.schema_type, base.schema, self.parsed_entry(base), req)
        versions = self.state.subjects.get(subject, {})
        live = [e for _, e in sorted(versions.items()) if not e.deleted]
        next_version = max(versions, default=0) + 1
        metadata = req.metadata if req.metadata is not None else base.metadata
        rule_set = req.rule_set
        if req.rules_to_merge is not None or req.rules_to_remove is not None:
            previous = self.state.subjects.get(subject, {}).get(req.new_version - 1) if req.new_version \
                else (live[-1] if live else None)
            rule_set = previous.rule_set if previous is not None and not previous.deleted else None
            if req.rules_to_merge is not None:
                rule_set = T.merge_rule_sets(rule_set, req.rules_to_merge)
            if req.rules_to_remove is not None:
                rule_set = T.remove_rules(rule_set, req.rules_to_remove)
        if rule_set is None and live:  # as a registration without one: the latest version's
            rule_set = live[-1].rule_set
        body = {"schema": text, "schemaType": base.schema_type, "references": base.references,
                "metadata": T.with_confluent_version(metadata, next_version), "ruleSet": rule_set,
                "version": req.new_version or 0}
        if not req.new_version:
            # Confluent's canLookup: a version that differs only in confluent:version is the answer
            _, schema_type, canonical, refs = self.prepare(subject, body, False)
            key = content_key(schema_type, canonical, refs, None, rule_set or None)
            bare = T.without_confluent_version(body["metadata"])
            for e in reversed(live):
                if self._same(e, key, 3) and e.content_key()[4] == key[4] \
                        and T.without_confluent_version(e.metadata) == bare:
                    return e
        return self.register(subject, body)

    def _check_writable(self, subject: str | None) -> None:
        if self.mode(subject) in READ_ONLY_MODES:
            raise not_permitted(f"Subject {subject} in context {CONTEXT} is in read-only mode")

    def delete_version(self, subject: str, version: str, *, permanent: bool = False) -> int:
        self.catch_up()
        self._check_writable(subject)
        versions = self._versions(subject)
        if version == "latest":
            live = [e for e in versions.values() if not e.deleted]
            if not live:
                raise subject_not_found(subject) if not permanent else version_not_found(version)
            e = max(live, key=lambda x: x.version)
        else:
            e = versions.get(int(version))
            if e is None:
                raise version_not_found(version)
        if not permanent and e.deleted:
            raise version_soft_deleted(subject, e.version)
        A.check_delete(subject, bool(self.associations_where(subject=subject)), permanent,
                       any(not x.deleted and x.version != e.version for x in versions.values()))
        if permanent and not e.deleted:
            raise version_not_soft_deleted(subject, e.version)
        if self.referenced_by(subject, e.version, deleted=permanent):
            raise reference_exists(subject, e.version)
        if permanent:
            recs = [(R.schema_key(subject, e.version), None), (R.noop_key(), R.noop_value(self.state.max_id))]
            if len(versions) == 1:  # the subject's last version: its config and mode go too
                if subject in self.state.configs:
                    recs.append((R.subject_key(R.CONFIG, subject), None))
                if subject in self.state.modes:
                    recs.append((R.subject_key(R.MODE, subject), None))
            self._append(recs)
        else:
            self._append([(R.schema_key(subject, e.version),
                           R.schema_value(subject, e.version, e.id, e.schema_type, e.schema, e.references,
                                          e.metadata, e.rule_set, deleted=True))])
        return e.version

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        self.catch_up()
        self._check_writable(subject)
        versions = self._versions(subject)
        live = [e for _, e in sorted(versions.items()) if not e.deleted]
        if not permanent and not live:
            raise subject_soft_deleted(subject)
        A.check_delete(subject, bool(self.associations_where(subject=subject)), permanent)
        targets = [e for _, e in sorted(versions.items())] if permanent else live
        for e in targets:
            refs = [i for i in self.referenced_by(subject, e.version, deleted=permanent)
                    if not any(x.subject == subject for x in self.state.ids.get(i, {}).values())]
            if refs:
                raise reference_exists(subject, e.version)
            if permanent and not e.deleted:
                raise subject_not_soft_deleted(subject)
        if permanent:
            recs = [(R.schema_key(subject, e.version), None) for e in reversed(targets)]
            recs.append((R.noop_key(), R.noop_value(self.state.max_id)))
            if subject in self.state.configs:
                recs.append((R.subject_key(R.CONFIG, subject), None))
            if subject in self.state.modes:
                recs.append((R.subject_key(R.MODE, subject), None))
            self._append(recs)
        else:
            self._append([(R.subject_key(R.DELETE_SUBJECT, subject),
                           R.delete_subject_value(subject, targets[-1].version))])
        return [e.version for e in targets]

    def set_config(self, subject: str | None, update: dict) -> dict:
        """Apply ``update`` (stored ConfigValue field -> typed value, None clears it; see
        ``schema_registry.config_model``) to the subject's (None: global) config."""
        self.catch_up()
        cfg = dict(self.state.configs.get(subject) or {})
        for k in R.CONFIG_FIELDS:
            if k in update:
                cfg[k] = update[k]
        cfg = {k: v for k, v in cfg.items() if v is not None}
        self._append([(R.subject_key(R.CONFIG, subject), R.config_value(subject, cfg))])
        return cfg

    def delete_config(self, subject: str | None) -> dict:
        self.catch_up()
        old = self.state.configs.get(subject) or {}
        self._append([(R.subject_key(R.CONFIG, subject), None)])
        return old

    def set_mode(self, subject: str | None, mode: str, *, force: bool = False) -> str:
        self.catch_up()
        if mode == "IMPORT" and not force:
            has = self.subjects() if subject is None else (
                [subject] if any(not e.deleted for e in self.state.subjects.get(subject, {}).values()) else [])
            if has and self.mode(subject) != "IMPORT":
                raise not_permitted("Cannot import since found existing subjects")
        self._append([(R.subject_key(R.MODE, subject), R.mode_value(subject, mode))])
        return mode

    def delete_mode(self, subject: str | None, *, recursive: bool = False) -> str:
        """Remove the subject's (None: the global) mode; ``recursive`` on the global mode also
        removes every subject's (the default context is the only one)."""
        self.catch_up()
        old = self.state.modes.get(subject, "READWRITE")
        scopes = [subject] + ([s for s in self.state.modes if s is not None] if recursive and subject is None else [])
        self._append([(R.subject_key(R.MODE, s), None) for s in scopes])
        return old

    # ---- associations (Confluent 8.3; the rules in schema_registry.associations) ----------------
    def associations_where(self, *, subject: str | None = None, resource_id: str | None = None,
                           resource_name: str | None = None, resource_namespace: str | None = None,
                           resource_type: str | None = None, types: list[str] = (),
                           lifecycle: str | None = None) -> list[A.Association]:
        """Stored associations matching every given criterion, in Confluent's order; a
        namespace of ``-`` matches any."""
        out = [a for a in self.state.associations.values()
               if (subject is None or a.subject == subject)
               and (resource_id is None or a.resource_id == resource_id)
               and (resource_name is None or a.resource_name == resource_name)
               and (resource_namespace in (None, A.NAMESPACE_WILDCARD) or a.resource_namespace == resource_namespace)
               and A.matches(a, resource_type, list(types), lifecycle)]
        return sorted(out, key=A.sort_key)

    def write_associations(self, req: A.Request, *, create: bool, dry_run: bool) -> dict:
        """POST /associations (``create``) and PUT /associations/resources/{id}: check as
        Confluent does, register the schemas the request carries, write the associations."""
        self.catch_up()
        A.validate(req, create, dry_run)
        for info in req.infos:
            if info.subject is not None:
                self._check_writable(info.subject)
        existing = {a.association_type: a for a in self.associations_where(
            resource_id=req.resource_id, resource_type=req.resource_type,
            types=[i.association_type for i in req.infos])} if req.resource_id else {}
        if not existing and create and dry_run and not req.resource_id:
            for a in self.associations_where(resource_name=req.resource_name, resource_namespace=req.resource_namespace,
                                             resource_type=req.resource_type):
                prev = existing.get(a.association_type)
                if prev is None or (a.update_ts or 0) >= (prev.update_ts or 0):
                    existing[a.association_type] = a

        def live(subject):
            return any(not e.deleted for e in self.state.subjects.get(subject, {}).values())

        def only_this_schema(subject, info):
            versions = [e for e in self.state.subjects.get(subject, {}).values() if not e.deleted]
            if len(versions) != 1 or versions[0].version != 1:
                return False
            try:
                self.lookup(subject, info.schema, normalize=bool(info.normalize))
            except RegistryError:
                return False
            return True

        skip = A.plan(req, create, existing, lambda s: self.associations_where(subject=s), live, only_this_schema)
        if create:
            for info in req.infos:  # an equivalent create that carries a schema must find it there
                if info.association_type in skip and info.schema is not None:
                    try:
                        self.lookup(info.subject, info.schema, normalize=bool(info.normalize))
                    except RegistryError:
                        old = existing[info.association_type]
                        raise A.for_resource_exists(old.association_type, old.resource_name) from None
        for info in req.infos:
            if info.schema is not None and self.mode(info.subject) != "IMPORT":
                parsed, *_ = self.prepare(info.subject, info.schema, bool(info.normalize))
                live_versions = [e for _, e in sorted(self.state.subjects.get(info.subject, {}).items())
                                 if not e.deleted]
                errors = check(parsed, [self.parsed_entry(e) for e in live_versions], self.level(info.subject),
                               self.policy(info.subject))
                if errors:
                    raise incompatible(info.subject, errors, live_versions[-1] if live_versions else None,
                                       self.level(info.subject))
        if dry_run:
            return A.response(req, [], {})
        schemas = {}
        for info in req.infos:
            if info.schema is not None and self.mode(info.subject) != "IMPORT":
                e = self.register(info.subject, info.schema, normalize=bool(info.normalize))
                schemas[info.association_type] = e.as_json()
        now = self.broker.clock.now_ms()
        written = [A.stored(req, info, existing.get(info.association_type), str(uuid.uuid4()), now)
                   for info in req.infos if info.association_type not in skip]
        if written:
            self._append([(R.assoc_key(A.TENANT, a.resource_name, a.resource_namespace, a.resource_type,
                                       a.association_type, a.subject),
                           R.assoc_value(a.guid, A.TENANT, a.resource_name, a.resource_namespace, a.resource_id,
                                         a.resource_type, a.association_type, a.subject, a.lifecycle, a.frozen,
                                         a.create_ts))
                          for a in written])
        return A.response(req, written, schemas)

    def delete_associations(self, resource_id: str, resource_type: str, types: list[str], *,
                            cascade: bool, dry_run: bool, missing_ok: bool = False) -> None:
        """DELETE /associations/resources/{id}: a frozen one only with ``cascadeLifecycle``,
        which also deletes a STRONG association's subject (soft, then permanently). Nothing
        to delete is 40410, but in a batch (``missing_ok``)."""
        self.catch_up()
        found = self.associations_where(resource_id=resource_id, resource_type=resource_type, types=types)
        if not found and not missing_ok:
            raise A.not_found(resource_id)
        for a in found:
            self._check_writable(a.subject)
            if not cascade and a.frozen:
                raise A.frozen_error(a.association_type, a.subject)
        if dry_run:
            return
        for a in found:
            self._append([(R.assoc_key(A.TENANT, a.resource_name, a.resource_namespace, a.resource_type,
                                       a.association_type, a.subject), None)])
            if cascade and a.lifecycle == A.STRONG and self.mode(a.subject) != "IMPORT" \
                    and self.state.subjects.get(a.subject):
                if any(not e.deleted for e in self.state.subjects[a.subject].values()):
                    self.delete_subject(a.subject)
                self.delete_subject(a.subject, permanent=True)

    def batch_get_association(self, q: A.GetQuery, *, include_schemas: bool, may_read=None) -> dict:
        """One item of ``POST /associations:batchGet`` (Confluent's batchGetAssociations): the
        resource's associations (those of subjects ``may_read`` allows), each STRONG or WEAK
        subject's latest live version with ``include_schemas``."""
        self.catch_up()
        A.validate_get_query(q)
        where = dict(resource_type=q.resource_type, types=q.types, lifecycle=q.lifecycle)
        if q.resource_id:
            found = self.associations_where(resource_id=q.resource_id, **where)
        else:
            found = self.associations_where(resource_name=q.resource_name,
                                            resource_namespace=q.resource_namespace, **where)
        found = [a for a in found if may_read is None or may_read(a.subject)]
        name, namespace, resource_id = q.resource_name, q.resource_namespace, q.resource_id
        if found:  # what the query left out, from the first found
            first = found[0]
            name = first.resource_name if name is None else name
            namespace = first.resource_namespace if namespace is None else namespace
            resource_id = first.resource_id if resource_id is None else resource_id
        schemas = {}
        if include_schemas:
            for a in found:
                live = [e for _, e in sorted(self.state.subjects.get(a.subject, {}).items()) if not e.deleted]
                if live:
                    schemas[a.association_type] = live[-1].as_json()
        return {"result": A.resource_response(name, namespace, resource_id, q.resource_type, found, schemas)}

    def mutate_association(self, req: A.OpRequest, *, dry_run: bool, may_write=None) -> dict:
        """One item of ``POST /associations:batchMutate`` (Confluent 8.3.1's mutateAssociations):
        every op validated first, then each applied as its single route applies it; the answer
        is the resource's associations after them all (none on a dry run) with the schemas the
        ops registered. ``may_write(subject, operation)`` raises for a subject the caller may
        not write (SUBJECT_WRITE for a create/upsert, SUBJECT_DELETE for what a delete removes)."""
        self.catch_up()
        steps = A.plan_ops(req, dry_run)
        if may_write is not None:
            for op, single in steps:
                if single is None:
                    for a in self.associations_where(resource_id=req.resource_id, resource_type=req.resource_type,
                                                     types=[op.association_type]):
                        may_write(a.subject, "SUBJECT_DELETE")
                    continue
                info = single.infos[0]
                old = self.associations_where(resource_id=req.resource_id, resource_type=req.resource_type,
                                              types=[info.association_type]) if req.resource_id else []
                may_write(info.subject if info.subject is not None
                          else old[0].subject if old else A.default_subject(single, info.association_type))
        schemas: dict[str, dict] = {}
        for op, single in steps:
            if single is None:
                self.delete_associations(req.resource_id, req.resource_type, [op.association_type],
                                         cascade=op.cascade, dry_run=dry_run, missing_ok=True)
                continue
            answer = self.write_associations(single, create=op.op_type == A.CREATE, dry_run=dry_run)
            for info in answer.get("associations", []):
                if "schema" in info:
                    schemas[info["associationType"]] = info["schema"]
        found = [] if dry_run else self.associations_where(resource_id=req.resource_id,
                                                           resource_type=req.resource_type)
        return {"result": A.resource_response(req.resource_name, req.resource_namespace, req.resource_id,
                                              req.resource_type, found, schemas)}

    # ---- metrics ------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return {"schemas": len(self.state.ids), "subjects": len(self.subjects()),
                "versions": sum(1 for v in self.state.subjects.values() for e in v.values() if not e.deleted)}


def _unprocessable(message: str) -> RegistryError:
    # what Confluent's REST layer answers for a body of the wrong shape (Jackson mapping errors)
    return RegistryError(422, 422, message)


def check_request(body) -> None:
    """A register/lookup body of the right shape, or 422 (an empty or missing schema: 42201)."""
    if not isinstance(body, dict):
        raise _unprocessable("Unrecognized request body: a JSON object was expected")
    if not isinstance(body.get("schema"), str) or not body["schema"].strip():
        raise invalid_schema("Empty schema")
    if body.get("schemaType") is not None and not isinstance(body["schemaType"], str):
        raise _unprocessable("schemaType must be a string")
    for k in ("id", "version"):
        v = body.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise _unprocessable(f"{k} must be an integer")
    refs = body.get("references")
    if refs is not None:
        if not isinstance(refs, list):
            raise _unprocessable("references must be a list")
        for r in refs:
            if not (isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("subject"), str)
                    and isinstance(r.get("version", -1), int) and not isinstance(r.get("version", -1), bool)):
                raise _unprocessable(f"Invalid schema reference {r!r}: name, subject and an integer version")
    for k in ("metadata", "ruleSet"):
        if body.get(k) is not None and not isinstance(body[k], dict):
            raise _unprocessable(f"{k} must be an object")
