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
40908 (frozen), 40410 (nothing to delete).

The batch operations (``POST /associations:batchGet`` and ``/associations:batchMutate``, 207
Multi-Status) are those of Confluent 8.3.1's ``AbstractSchemaRegistry.batchGetAssociations`` /
``mutateAssociations``: each item is validated and applied on its own, its failure is that
item's ``error`` (``{"error_code", "message"}``), never the whole answer's. A mutation item's
ops are validated together first (``AssociationOpRequest.validate``), then applied one by one
(CREATE as ``POST /associations``, UPSERT as ``PUT``, DELETE as ``DELETE`` without the 40410),
with no undo of the ops before a failing one, as Confluent.

A subject with any association is not deleted (40904; soft and permanent alike), nor is its
last live version soft-deleted (40907) or any version permanently (40904): only deleting the
association with ``cascadeLifecycle`` removes a STRONG association's subject (8.3.1's
``KafkaSchemaRegistry.deleteSubject``/``deleteSchemaVersion``).

Contexts are not served (``GET /contexts`` answers the default one): the default subject
``:.<namespace>:<name>-<type>`` is kept as a plain subject name in the default context.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace

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


class InvalidProperty(RegistryError):
    """Confluent's IllegalPropertyException as its REST layer answers it (42212)."""

    def __init__(self, prop: str, detail: str):
        super().__init__(422, 42212, f"The association specified an invalid value for property: '{prop}', "
                                     f"detail: {detail}")
        self.prop, self.detail = prop, detail


def invalid(prop: str, detail: str) -> RegistryError:
    return InvalidProperty(prop, detail)


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


NAME_MAX_LENGTH = 256  # Confluent's RestValidation.NAME_MAX_LENGTH (UTF-16 code units)
_LETTER_OR_DIGIT = {"Lu", "Ll", "Lt", "Lm", "Lo", "Nd"}  # Java's Character.isLetterOrDigit(char)


def check_name(value: str | None, prop: str) -> None:
    """Confluent's RestValidation.checkName: a resource name or namespace is non-empty, at most
    256 UTF-16 units, of letters, digits, ``_`` and ``-`` only (a character outside the BMP is
    two surrogates in Java, neither a letter)."""
    if not value:
        raise invalid(prop, "cannot be null or empty")
    if len(value.encode("utf-16-le", "surrogatepass")) // 2 > NAME_MAX_LENGTH:
        raise invalid(prop, f"exceeds max length of {NAME_MAX_LENGTH}")
    for c in value:
        if not (c in "_-" or (ord(c) <= 0xFFFF and unicodedata.category(c) in _LETTER_OR_DIGIT)):
            raise invalid(prop, f"illegal character '{c}'")


def check_subject(subject: str) -> None:
    """Confluent's RestValidation.checkSubject: non-empty, no ISO control character."""
    if not subject or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in subject):
        raise invalid("subject", "must not be empty")


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


def _validate_resource(req, entries: list, dry_run: bool) -> None:
    """The resource part of a request (a single one or a batch item): names, id (but on a dry
    run), type (default ``topic``), and at least one association."""
    check_name(req.resource_name, "resourceName")
    check_name(req.resource_namespace, "resourceNamespace")
    if not dry_run and not req.resource_id:
        raise invalid("resourceId", "cannot be null or empty")
    if req.resource_type:
        if req.resource_type != TOPIC:
            raise invalid("resourceType", f"must be '{TOPIC}'")
    else:
        req.resource_type = TOPIC
    if not entries:
        raise invalid("associations", "cannot be null or empty")


def _association_type(value: str | None) -> str:
    """``key`` or ``value`` (the default)."""
    if value and value not in (KEY, VALUE):
        raise invalid("associationType", f"must be either '{KEY}' or '{VALUE}'")
    return value or VALUE


def validate(req: Request, create: bool, dry_run: bool) -> None:
    """Confluent's request validation (before anything stored is looked at); fills defaults."""
    _validate_resource(req, req.infos, dry_run)
    seen = set()
    for info in req.infos:
        if info.subject is not None:
            check_subject(info.subject)
        if create:
            _apply_defaults(info, True)
        info.association_type = _association_type(info.association_type)
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
    d = {k: v for k, v in (("resourceName", req.resource_name), ("resourceNamespace", req.resource_namespace),
                           ("resourceId", req.resource_id), ("resourceType", req.resource_type)) if v}
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


def check_delete(subject: str, associated: bool, permanent: bool, others_live: bool | None = None) -> None:
    """Whether a subject (``others_live`` None) or one of its versions (``others_live``: does a
    live version other than this one remain) may be deleted, given whether the subject has any
    association (Confluent 8.3.1's deleteSubject/deleteSchemaVersion): a subject with one is
    never deleted (40904), a version only softly and not its last live one (40907)."""
    if not associated:
        return
    if others_live is None or permanent:
        raise for_subject_exists(subject)
    if not others_live:
        raise no_active_version(subject)


# ---- batches (Confluent 8.3.1's /associations:batchGet and /associations:batchMutate) ----------
CREATE, UPSERT, DELETE = "CREATE", "UPSERT", "DELETE"  # AssociationOp's opType
BATCH_STATUS = 207  # Multi-Status: each item carries its own result or error
SERVER_ERROR = 500  # RestServerErrorException.DEFAULT_ERROR_CODE
# what a batch item's error keeps of a single operation's error (mutateAssociations' catches);
# 40301 is ours: the item's subject denied under ACLs, as its single-item route decides
_KEPT_CODES = {42212, 40901, 40903, 40904, 40905, 40907, 40908, 42209, 40301}


def unprocessable(message: str) -> RegistryError:
    """A body Jackson cannot map (Confluent's REST layer: 422 with code 422), whole request."""
    return RegistryError(422, 422, message)


@dataclass
class Op:
    """One op of a batch mutation (AssociationCreateOp / UpsertOp / DeleteOp)."""
    op_type: str
    info: Info | None = None  # CREATE, UPSERT
    association_type: str | None = None  # DELETE
    cascade: bool = False  # DELETE's cascadeLifecycle


@dataclass
class OpRequest:
    """One item of a batch mutation (AssociationOpRequest): a resource and its ops."""
    resource_name: str | None
    resource_namespace: str | None
    resource_id: str | None
    resource_type: str | None
    ops: list[Op] = field(default_factory=list)


@dataclass
class GetQuery:
    """One item of a batch get (AssociationGetRequest)."""
    resource_name: str | None
    resource_namespace: str | None
    resource_id: str | None
    resource_type: str | None
    types: list[str]
    lifecycle: str | None


def batch_items(body: dict) -> list:
    """The ``requests`` of a batch body; absent or empty is Confluent's 42212 (whole request)."""
    raw = body.get("requests")
    if raw is not None and not isinstance(raw, list):
        raise unprocessable("requests must be a list")
    if not raw:
        raise invalid("requests", "cannot be null or empty")
    if not all(isinstance(item, dict) for item in raw):
        raise unprocessable("each of requests must be an object")
    return raw


def _lifecycle_or_none(body: dict) -> str | None:
    v = _str_or_none(body, "lifecycle")
    if v is not None and v.upper() not in (STRONG, WEAK):
        raise invalid("lifecycle", f"must be {STRONG} or {WEAK}")
    return v.upper() if v is not None else None


def parse_op_request(item: dict) -> OpRequest:
    """One mutation item as Jackson maps it: ``opType`` selects the op's class (a missing or
    unknown one fails the whole body, as Jackson's type id does); unknown properties ignored."""
    ops = []
    raw = item.get("associations")
    if raw is not None and not isinstance(raw, list):
        raise invalid("associations", "must be a list")
    for op in raw or []:
        if not isinstance(op, dict):
            raise invalid("associations", "each must be an object")
        op_type = op.get("opType")
        if op_type not in (CREATE, UPSERT, DELETE):
            raise unprocessable(f"Could not resolve type id {op_type!r} as a subtype of AssociationOp: "
                                f"known type ids = [{CREATE}, {DELETE}, {UPSERT}]" if op_type is not None
                                else "Missing type id when trying to resolve subtype of AssociationOp: "
                                     "missing type id property 'opType'")
        if op_type == DELETE:
            ops.append(Op(DELETE, association_type=_str_or_none(op, "associationType"),
                          cascade=bool(_bool_or_none(op, "cascadeLifecycle"))))
        else:
            ops.append(Op(op_type, info=parse_request({"associations": [op]}).infos[0]))
    return OpRequest(_str_or_none(item, "resourceName"), _str_or_none(item, "resourceNamespace"),
                     _str_or_none(item, "resourceId"), _str_or_none(item, "resourceType"), ops)


def plan_ops(req: OpRequest, dry_run: bool) -> list[tuple[Op, Request | None]]:
    """Confluent's AssociationOpRequest.validate: the resource, then every op (each CREATE or
    UPSERT as the single request it is applied as, validated as POST/PUT validate it), before
    any op is applied. Each op with its request (None for a DELETE); fills defaults."""
    _validate_resource(req, req.ops, dry_run)
    out: list[tuple[Op, Request | None]] = []
    for op in req.ops:
        if op.op_type == DELETE:
            op.association_type = _association_type(op.association_type)
            out.append((op, None))
            continue
        single = Request(req.resource_name, req.resource_namespace, req.resource_id, req.resource_type, [op.info])
        validate(single, op.op_type == CREATE, dry_run)
        out.append((op, single))
    return out


def parse_get_query(item: dict) -> GetQuery:
    types = item.get("associationTypes")
    if types is not None and not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
        raise unprocessable("associationTypes must be a list of strings")
    return GetQuery(_str_or_none(item, "resourceName"), _str_or_none(item, "resourceNamespace"),
                    _str_or_none(item, "resourceId"), _str_or_none(item, "resourceType"), types or [],
                    _lifecycle_or_none(item))


def validate_get_query(q: GetQuery) -> None:
    """Confluent's AssociationGetRequest.validate; the resource type defaults to ``topic``."""
    if not q.resource_id and not q.resource_name:
        raise invalid("resourceId", "either resourceId or resourceName must be specified")
    if q.resource_name and not q.resource_namespace:
        raise invalid("resourceNamespace", "resourceNamespace is required when resourceName is specified")
    q.resource_type = q.resource_type or TOPIC


def resource_response(name, namespace, resource_id, resource_type, found: list[Association],
                      schemas: dict[str, dict]) -> dict:
    """Confluent's Association.toAssociationResponse: every association must be of the named
    resource (else the item fails, 500)."""
    for a in found:
        if (a.resource_name, a.resource_namespace, a.resource_id, a.resource_type) \
                != (name, namespace, resource_id, resource_type):
            raise RegistryError(SERVER_ERROR, SERVER_ERROR, "All associations must have the same resourceName, "
                                "resourceNamespace, resourceId, and resourceType.")
    return response(Request(name, namespace, resource_id, resource_type, []), found, schemas)


def mutate_error(err: RegistryError) -> dict:
    """A failed mutation item: ``{"error": {"error_code", "message"}}`` as mutateAssociations'
    catches map a single operation's error (an invalid schema is 42212; what they do not
    name is 500, "Error while creating association: ...")."""
    code, message = err.error_code, err.message
    if code == 42201:
        code = 42212
    elif code not in _KEPT_CODES:
        code, message = SERVER_ERROR, "Error while creating association: " + message
    return {"error": {"error_code": code, "message": message}}


def get_error(err: RegistryError) -> dict:
    """A failed get item: batchGetAssociations catches everything as 500 with the exception's
    own message (IllegalPropertyException's is ``property: P; detail: D``)."""
    detail = f"property: {err.prop}; detail: {err.detail}" if isinstance(err, InvalidProperty) else err.message
    return {"error": {"error_code": SERVER_ERROR, "message": "Error while getting associations: " + detail}}
