"""Confluent 8.3's associations (pure): a Kafka resource (a topic, by name, namespace = the
Kafka cluster id, and id) tied to the subjects holding its key and value schemas.

The rules are those of Confluent's ``AssociationCreateOrUpdateRequest.validate``,
``AssociationCreateOrUpdateInfo.applyDefaults``/``validate`` and
``AbstractSchemaRegistry.createOrUpdateAssociation``/``deleteAssociations`` (8.3):

- ``resourceName`` and ``resourceNamespace`` are required, ``resourceId`` too (but on a dry run),
  ``resourceType`` is ``topic`` (the default), ``associationType`` ``key`` or ``value`` (default
  ``value``), each at most once per request;
- the lifecycle is STRONG (the subject lives and dies with the topic: deleting the association
  with ``cascadeLifecycle=true`` deletes the subject) or WEAK (shared; a subject is required).
  A schema in the request registers it and makes the association STRONG, frozen on create
  (``POST``), not frozen on upsert (``PUT``). A frozen association uses the default subject
  ``:.<namespace>:<name>-<type>`` and cannot change or be deleted without cascading;
- a STRONG association's subject has no other association; a WEAK one's has no STRONG one;
  without a schema in the request the subject needs a live version (40907);
- a create that matches what exists (same subject, type, and lifecycle/frozen when given) is a
  no-op; any other create of an existing type is 40903.

Errors are Confluent's: 42212 (invalid property, with its detail), 40903, 40904, 40905, 40907,
40908 (frozen), 40410 (nothing to delete). Not served (Confluent 8.3 serves them): the batch
operations (``/associations:batchGet``, ``/associations:batchMutate``) and contexts (the
default subject is kept as a plain subject name in the one default context).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from schema_registry.errors import RegistryError

TOPIC = "topic"
KEY, VALUE = "key", "value"
STRONG, WEAK = "STRONG", "WEAK"
TENANT = "default"  # Confluent's QualifiedSubject.DEFAULT_TENANT
NAMESPACE_WILDCARD = "-"


@dataclass(frozen=True)
class Association:
    """One stored association (Confluent's AssociationValue), keyed by ``key()``."""
    guid: str
    resource_name: str
    resource_namespace: str
    resource_id: str
    resource_type: str
    association_type: str
    subject: str
    lifecycle: str
    frozen: bool
    create_ts: int | None = None
    update_ts: int | None = None  # the record's timestamp

    def key(self) -> tuple:
        return (self.resource_name, self.resource_namespace, self.resource_type, self.association_type, self.subject)

    def as_json(self) -> dict:
        """Confluent's Association entity (NON_EMPTY: null timestamps left out; frozen always)."""
        d = {"subject": self.subject, "guid": self.guid, "resourceName": self.resource_name,
             "resourceNamespace": self.resource_namespace, "resourceId": self.resource_id,
             "resourceType": self.resource_type, "associationType": self.association_type,
             "lifecycle": self.lifecycle, "frozen": self.frozen}
        if self.create_ts is not None:
            d["createTs"] = self.create_ts
        if self.update_ts is not None:
            d["updateTs"] = self.update_ts
        return d


@dataclass
class Info:
    """One entry of a create/update request (AssociationCreateOrUpdateInfo)."""
    subject: str | None
    association_type: str | None
    lifecycle: str | None
    frozen: bool | None
    schema: dict | None
    normalize: bool | None


@dataclass
class Request:
    resource_name: str | None
    resource_namespace: str | None
    resource_id: str | None
    resource_type: str | None
    infos: list[Info]


def invalid(prop: str, detail: str) -> RegistryError:
    return RegistryError(422, 42212, f"The association specified an invalid value for property: '{prop}', "
                                     f"detail: {detail}")


def for_resource_exists(assoc_type: str, resource: str) -> RegistryError:
    return RegistryError(409, 40903, f"An association of type '{assoc_type}' already exists for resource '{resource}'")


def for_subject_exists(subject: str) -> RegistryError:
    return RegistryError(409, 40904, f"An association already exists for subject '{subject}'")


def strong_for_subject_exists(subject: str) -> RegistryError:
    return RegistryError(409, 40905, f"A strong association already exists for subject '{subject}'")


def no_active_version(subject: str) -> RegistryError:
    return RegistryError(409, 40907, f"No active (non-deleted) version exists for subject '{subject}'")


def frozen_error(assoc_type: str, subject: str) -> RegistryError:
    return RegistryError(409, 40908, f"The association of type  '{assoc_type}' is frozen for subject '{subject}'")


def not_found(resource: str) -> RegistryError:
    return RegistryError(404, 40410, f"Association for '{resource}' not found.")


def _str_or_none(body: dict, name: str) -> str | None:
    v = body.get(name)
    if v is not None and not isinstance(v, str):
        raise invalid(name, "must be a string")
    return v


def _bool_or_none(body: dict, name: str) -> bool | None:
    v = body.get(name)
    if v is not None and not isinstance(v, bool):
        raise invalid(name, "must be a boolean")
    return v


def parse_request(body: dict, resource_id: str | None = None) -> Request:
    """The request body as Confluent's Jackson reads it (unknown properties ignored); the
    path's resource id, for PUT, wins."""
    infos = []
    raw = body.get("associations")
    if raw is not None and not isinstance(raw, list):
        raise invalid("associations", "must be a list")
    for item in raw or []:
        if not isinstance(item, dict):
            raise invalid("associations", "each must be an object")
        lifecycle = _str_or_none(item, "lifecycle")
        if lifecycle is not None:
            if lifecycle.upper() not in (STRONG, WEAK):
                raise invalid("lifecycle", f"must be {STRONG} or {WEAK}")
            lifecycle = lifecycle.upper()
        schema = item.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise invalid("schema", "must be an object")
        infos.append(Info(_str_or_none(item, "subject"), _str_or_none(item, "associationType"), lifecycle,
                          _bool_or_none(item, "frozen"), schema, _bool_or_none(item, "normalize")))
    return Request(_str_or_none(body, "resourceName"), _str_or_none(body, "resourceNamespace"),
                   resource_id if resource_id is not None else _str_or_none(body, "resourceId"),
                   _str_or_none(body, "resourceType"), infos)


def default_subject(req: Request, assoc_type: str) -> str:
    """The subject a STRONG association owns: ``<name>-<type>`` in the namespace's context."""
    return f":.{req.resource_namespace}:{req.resource_name}-{assoc_type}"


def _apply_defaults(info: Info, create: bool) -> None:
    if info.schema is not None:
        if info.lifecycle == WEAK:
            raise invalid("lifecycle", "cannot be WEAK when schema is provided")
        if info.frozen is not None and info.frozen != create:
            raise invalid("frozen", "cannot be false when schema is provided for create" if create
                          else "cannot be true when creating via upsert; use create instead")
        info.lifecycle, info.frozen = STRONG, create
    elif info.frozen is None:
        info.frozen = False
    if info.lifecycle is None:
        info.lifecycle = WEAK
    if info.lifecycle == WEAK and info.frozen:
        raise invalid("frozen", "association with lifecycle of WEAK cannot be frozen")


def validate(req: Request, create: bool, dry_run: bool) -> None:
    """Confluent's request validation (before anything stored is looked at); fills defaults."""
    for value, prop in ((req.resource_name, "resourceName"), (req.resource_namespace, "resourceNamespace")):
        if not value:
            raise invalid(prop, "cannot be null or empty")
    if not dry_run and not req.resource_id:
        raise invalid("resourceId", "cannot be null or empty")
    if req.resource_type:
        if req.resource_type != TOPIC:
            raise invalid("resourceType", f"must be '{TOPIC}'")
    else:
        req.resource_type = TOPIC
    if not req.infos:
        raise invalid("associations", "cannot be null or empty")
    seen = set()
    for info in req.infos:
        if info.subject is not None and (not info.subject or any(ord(c) < 32 for c in info.subject)):
            raise invalid("subject", "must be a valid subject")
        if create:
            _apply_defaults(info, True)
        if info.association_type:
            if info.association_type not in (KEY, VALUE):
                raise invalid("associationType", f"must be either '{KEY}' or '{VALUE}'")
        else:
            info.association_type = VALUE
        if info.lifecycle == WEAK:
            if info.schema is not None:
                raise invalid("lifecycle", "cannot be WEAK when schema is provided")
            if info.frozen:
                raise invalid("frozen", "association with lifecycle of WEAK cannot be frozen")
            if create and info.subject is None:
                raise invalid("subject", "must be provided for WEAK associations")
        if create:
            default = default_subject(req, info.association_type)
            if info.subject is None:
                info.subject = default
            if info.frozen and info.subject != default:
                raise invalid("subject", f"frozen associations must use subject '{default}'")
            if info.lifecycle == WEAK and info.subject == default:
                raise invalid("subject", f"WEAK associations cannot use subject '{default}'")
        if info.association_type in seen:
            raise invalid("associationType", f"Duplicate association type: {info.association_type}")
        seen.add(info.association_type)


def plan(req: Request, create: bool, existing: dict[str, Association], by_subject, live_version,
         only_this_schema) -> set[str]:
    """Check a validated request against what is stored; the association types left as they
    are (an equivalent create or update). ``existing``: the resource's associations by type;
    ``by_subject(subject)``: every association of a subject; ``live_version(subject)``: whether
    it has a live version; ``only_this_schema(subject, info)``: whether the subject's only
    version is version 1 holding the info's schema. Raises Confluent's errors. Fills each
    info's subject and lifecycle."""
    skip: set[str] = set()
    for info in req.infos:
        old = existing.get(info.association_type)
        if old is None and not create:
            _apply_defaults(info, False)
        default = default_subject(req, info.association_type)
        if info.subject is None:
            if old is not None:
                info.subject = old.subject
            elif info.lifecycle == STRONG:
                info.subject = default
            else:
                raise invalid("subject", "must be provided for WEAK associations")
        lifecycle = info.lifecycle or (old.lifecycle if old is not None else None)
        if lifecycle is None:
            raise invalid("lifecycle", "lifecycle must be set")
        if lifecycle == WEAK:
            if info.schema is not None:
                raise invalid("lifecycle", "cannot be WEAK when schema is provided")
            if info.subject == default:
                raise invalid("subject", f"WEAK associations cannot use subject '{default}'")
        frozen = old.frozen if old is not None else bool(info.frozen)
        if frozen and info.subject != default:
            raise invalid("subject", f"frozen associations must use subject '{default}'")
        if old is None:
            if info.frozen:
                if create and info.schema is None:
                    raise invalid("schema", "schema must be provided when creating a frozen association")
                if live_version(info.subject) and (info.schema is None or not only_this_schema(info.subject, info)):
                    raise invalid("frozen", "cannot create a frozen association when schemas already exist "
                                            "in the subject")
            continue
        equivalent = (old.subject == info.subject and old.association_type == info.association_type
                      and (info.lifecycle is None or info.lifecycle == old.lifecycle)
                      and (info.frozen is None or info.frozen == old.frozen))
        if equivalent:
            skip.add(info.association_type)
            continue
        if create:
            raise for_resource_exists(old.association_type, old.resource_name)
        if info.lifecycle is None and info.schema is None:
            raise invalid("lifecycle", "at least lifecycle or schema must be provided for update")
        if old.subject != info.subject:
            raise invalid("subject", f"subject of association cannot be changed from '{old.subject}' "
                                     f"to '{info.subject}'")
        if old.lifecycle == STRONG and info.lifecycle == WEAK and old.subject == default:
            raise invalid("lifecycle", f"cannot change to WEAK when subject matches default format '{default}'")
        if info.frozen is not None and old.frozen != info.frozen:
            raise invalid("frozen", "frozen attribute of association cannot be changed")
        if old.frozen:
            raise frozen_error(old.association_type, old.subject)
    for info in req.infos:
        old = existing.get(info.association_type)
        if info.schema is None and not live_version(info.subject):
            raise no_active_version(info.subject)
        others = [a for a in by_subject(info.subject)
                  if old is None or (a.resource_id, a.resource_type, a.association_type)
                  != (old.resource_id, old.resource_type, old.association_type)]
        lifecycle = info.lifecycle or (old.lifecycle if old is not None else None)
        if lifecycle == STRONG and others:
            raise for_subject_exists(info.subject)
        if lifecycle == WEAK and any(a.lifecycle == STRONG for a in others):
            raise strong_for_subject_exists(info.subject)
    return skip


def stored(req: Request, info: Info, old: Association | None, guid: str, now: int) -> Association:
    """The association a create/update writes for one entry."""
    if old is None:
        return Association(guid, req.resource_name, req.resource_namespace, req.resource_id, req.resource_type,
                           info.association_type, info.subject, info.lifecycle or WEAK, bool(info.frozen), now)
    return replace(old, lifecycle=info.lifecycle or old.lifecycle, update_ts=None)


def matches(a: Association, resource_type: str | None, types: list[str], lifecycle: str | None) -> bool:
    return ((resource_type is None or a.resource_type == resource_type)
            and (not types or a.association_type in types)
            and (lifecycle is None or a.lifecycle == lifecycle))


def sort_key(a: Association) -> tuple:
    return a.key()


def response(req: Request, written: list[Association], schemas: dict[str, dict]) -> dict:
    """Confluent's AssociationResponse (NON_EMPTY: an empty list is left out)."""
    d = {"resourceName": req.resource_name, "resourceNamespace": req.resource_namespace}
    if req.resource_id:
        d["resourceId"] = req.resource_id
    d["resourceType"] = req.resource_type
    infos = []
    for a in written:
        info = {"subject": a.subject, "associationType": a.association_type, "lifecycle": a.lifecycle,
                "frozen": a.frozen}
        if a.association_type in schemas:
            info["schema"] = schemas[a.association_type]
        infos.append(info)
    if infos:
        d["associations"] = infos
    return d
