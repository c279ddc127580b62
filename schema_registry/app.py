"""The Schema Registry's HTTP routes: Confluent's REST API as a thin layer over the store.

Every answer is ``application/vnd.schemaregistry.v1+json``; every error Confluent's
``{"error_code", "message"}`` with its codes (``schema_registry.errors``). A request waits
until the store has replayed ``_schemas``, then first catches up with the log.

Extension: ``asOf`` (ISO-8601 time or epoch milliseconds) on ``GET /subjects/{s}/versions``
and ``GET /subjects/{s}/versions/latest`` answers the version that was latest at that moment,
by the timestamps of the ``_schemas`` records.
"""
from __future__ import annotations

import collections
import datetime as _dt
import json
import unicodedata

from aiohttp import web

from schema_registry import errors as E
from schema_registry.config_model import config_update
from schema_registry.schemas import BODY_ERRORS, SCHEMA_TEXT
from schema_registry.store import MODES, SchemaStore
from web.auth import BrokerUsers
from web.http import HttpError, add_routes_slash_tolerant, error_response, middlewares, read_json
from web.openapi import INT32, STRING, array, ref, responds

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_BODY_TYPES = {"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                       "application/json", "application/octet-stream", ""}
MAX_BODY = 16 << 20  # bytes; a larger body is answered 413
SCHEMA_TYPES = ["JSON", "PROTOBUF", "AVRO"]
STORE_KEY = web.AppKey("store", SchemaStore)
STATS_KEY = web.AppKey("stats", collections.Counter)
MAY_READ = web.RequestKey("may_read", object)  # subject -> bool, set when the broker's ACLs are on
# (subject, operation="SUBJECT_WRITE") -> None or 403, set when the broker's ACLs are on: for the
# routes whose subjects are in the body or the store (associations), checked by the handler
MAY_WRITE = web.RequestKey("may_write", object)
_MAX_VERSION = 2**31 - 1
# a subject in a path: any character Confluent allows, URL-encoded ({, }, spaces, ...), but "/"
SUBJECT = "{subject:[^/]+}"
# what Confluent's resources produce, with their server-side weights (Versions.*_WEIGHTED)
PRODUCES = ((CONTENT_TYPE, 1.0), ("application/vnd.schemaregistry+json", 0.9), ("application/json", 0.5))


def _ok(body, status: int = 200) -> web.Response:
    return _raw(json.dumps(body, separators=(",", ":")), status)


def _raw(text: str, status: int = 200) -> web.Response:
    # Confluent's exact Content-Type (aiohttp's text= would add "; charset=utf-8")
    return web.Response(status=status, headers={"Content-Type": CONTENT_TYPE}, body=text.encode())


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


def _version(raw: str) -> str | int:
    """``latest``/-1 or an int in [1, 2^31-1]; else 42202 as Confluent."""
    if raw == "latest":
        return "latest"
    try:
        v = int(raw)
    except ValueError:
        raise E.invalid_version(raw) from None
    if v == -1:
        return "latest"
    if not 1 <= v <= _MAX_VERSION:
        raise E.invalid_version(raw)
    return v


def _schema_id(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise HttpError(404, 404, "HTTP 404 Not Found") from None


def parse_as_of(raw: str) -> int:
    """Epoch milliseconds from ``asOf`` (an integer, or an ISO-8601 time; naive means UTC)."""
    raw = raw.strip()
    if raw.lstrip("-").isdigit():
        return int(raw)
    try:
        t = _dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise HttpError(400, 400, f"asOf must be an ISO-8601 time or epoch milliseconds, not {raw!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return int(t.timestamp() * 1000)


async def _body(request: web.Request) -> dict:
    ctype = request.content_type if request.body_exists else ""
    if ctype not in ACCEPTED_BODY_TYPES:
        raise HttpError(415, 415, "HTTP 415 Unsupported Media Type")
    body = await read_json(request)
    if not isinstance(body, dict):
        raise HttpError(422, 422, "Unrecognized request body: a JSON object was expected")
    return body


def _valid_subject(subject: str) -> None:
    """Confluent's QualifiedSubject.isValidSubject: no control characters, not a reserved name."""
    if any(unicodedata.category(c) == "Cc" for c in subject) or subject in ("__GLOBAL", "__EMPTY"):
        raise E.invalid_subject(subject)


def negotiate(accept: str | None) -> str | None:
    """The media type Jersey answers for ``accept`` among ``PRODUCES``: the client's q first,
    then the server's weight; None when nothing is acceptable (406)."""
    if accept is None or not accept.strip():
        return CONTENT_TYPE
    best: tuple[float, float] | None = None
    chosen = None
    for part in accept.split(","):
        media, *params = [p.strip() for p in part.split(";")]
        if not media:
            continue
        q = 1.0
        for param in params:
            k, _, v = param.partition("=")
            if k.strip().lower() == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        mtype, _, msub = media.lower().partition("/")
        if q <= 0:
            continue
        for produced, qs in PRODUCES:
            ptype, _, psub = produced.partition("/")
            if mtype == "*" or (mtype == ptype and msub in ("*", psub)):
                if best is None or (q, qs) > best:
                    best, chosen = (q, qs), produced
    return chosen


def create_routes(store: SchemaStore, associations: bool = True) -> web.RouteTableDef:
    routes = web.RouteTableDef()

    @routes.get("/")
    @responds({200: "Root"})
    async def root(request):
        return _ok({})

    @routes.get("/v1/metadata/id")
    @responds({200: "ServerClusterId"})
    async def metadata_id(request):
        return _ok({"scope": {"path": [], "clusters": {"kafka-cluster": store.broker.cluster_id,
                                                        "schema-registry-cluster": "schema-registry"}}})

    @routes.get("/contexts")
    @responds({200: array(STRING)})
    async def contexts(request):
        return _ok(["."])

    @routes.get("/schemas/types")
    @responds({200: array(STRING)})
    async def schema_types(request):
        return _ok(SCHEMA_TYPES)

    @routes.get("/schemas")
    @responds({200: array("Schema")})
    async def schemas(request):
        prefix = request.query.get("subjectPrefix", "")
        deleted, latest_only = _flag(request, "deleted"), _flag(request, "latestOnly")
        out = []
        may_read = request.get(MAY_READ, lambda s: True)
        for s in filter(may_read, store.subjects(deleted=deleted, prefix=prefix)):
            versions = store.versions(s, deleted=deleted)
            out.extend(e.as_json() for e in (versions[-1:] if latest_only else versions))
        return _ok(out)

    def _by_id(request):
        e = store.schema_by_id(_schema_id(request.match_info["id"]))
        if e is None:
            raise E.schema_not_found(request.match_info["id"])
        return e

    def _formatted(request, e, d: dict) -> dict:
        fmt = request.query.get("format")
        if fmt:
            text = store.parsed_entry(e).formatted(fmt)
            if text is not None:
                d["schema"] = text
        wanted = request.query.getall("findTags", [])
        if wanted:  # Confluent's extractSchemaTags: the tagged entities, after the schema
            from schema_registry.tags import find_tags
            found = find_tags(store.parsed_entry(e), wanted)
            if found:
                d["schemaTags"] = found
        return d

    @routes.get("/schemas/ids/{id}")
    @responds({200: "SchemaString"}, errors=(404,))
    async def schema_by_id(request):
        e = _by_id(request)
        d = e.as_json(with_subject=False)
        d.pop("id")
        return _ok(_formatted(request, e, d))

    @routes.get("/schemas/guids/{guid}")
    @responds({200: "SchemaString"}, errors=(404,))
    async def schema_by_guid(request):
        e = store.schema_by_guid(request.match_info["guid"])
        if e is None:
            raise E.schema_not_found(request.match_info["guid"])
        d = e.as_json(with_subject=False)
        d.pop("id")
        return _ok(_formatted(request, e, d))

    @routes.get("/schemas/ids/{id}/schema")
    @responds({200: SCHEMA_TEXT}, errors=(404,))
    async def schema_text_by_id(request):
        return _raw(_by_id(request).schema)

    @routes.get("/schemas/ids/{id}/subjects")
    @responds({200: array(STRING)}, errors=(404,))
    async def subjects_by_id(request):
        sid = _schema_id(request.match_info["id"])
        holders = store.state.ids.get(sid) or {}
        deleted = _flag(request, "deleted")
        subjects = sorted({s for (s, _), e in holders.items() if deleted or not e.deleted})
        if not holders:
            raise E.schema_not_found(sid)
        return _ok(subjects)

    @routes.get("/schemas/ids/{id}/versions")
    @responds({200: array("SubjectVersion")}, errors=(404,))
    async def versions_by_id(request):
        sid = _schema_id(request.match_info["id"])
        holders = store.state.ids.get(sid) or {}
        if not holders:
            raise E.schema_not_found(sid)
        deleted = _flag(request, "deleted")
        return _ok([{"subject": s, "version": v} for (s, v), e in sorted(holders.items())
                    if deleted or not e.deleted])

    @routes.get("/subjects")
    @responds({200: array(STRING)})
    async def subjects(request):
        may_read = request.get(MAY_READ, lambda s: True)  # only what the caller may read (ACLs on)
        return _ok([s for s in store.subjects(deleted=_flag(request, "deleted"),
                                              prefix=request.query.get("subjectPrefix", "")) if may_read(s)])

    @routes.get("/subjects/" + SUBJECT + "/versions")
    @responds({200: {"anyOf": [array(INT32), ref("Schema")]}}, errors=(400, 404))
    async def list_versions(request):
        subject = request.match_info["subject"]
        if "asOf" in request.query:
            return _ok(store.version_as_of(subject, parse_as_of(request.query["asOf"])).as_json())
        return _ok([e.version for e in store.versions(subject, deleted=_flag(request, "deleted"))])

    @routes.post("/subjects/" + SUBJECT + "/versions")
    @responds({200: "RegisterSchemaResponse"}, errors=(*BODY_ERRORS, 404, 409))
    async def register(request):
        _valid_subject(request.match_info["subject"])
        body = await _body(request)
        tagged = bool(body.get("schemaTagsToAdd") or body.get("schemaTagsToRemove") or body.get("propagateSchemaTags") is True)
        if tagged:  # Confluent's RegisterSchemaRequest with schema tags: the text is edited
            e = store.register_with_tags(request.match_info["subject"], body, normalize=_flag(request, "normalize"))
        else:
            e = store.register(request.match_info["subject"], body, normalize=_flag(request, "normalize"))
        # Confluent's RegisterSchemaResponse (its 7.x answered the id alone; clients read both)
        d = e.as_json()
        del d["subject"]
        # PROTOBUF: the schema in the form the client sent it. confluent-kafka caches this answer's
        # text as the id's schema, and its deserializer then expects the base64 form it registered.
        if d.get("schemaType") == "PROTOBUF" and isinstance(body.get("schema"), str) and not tagged:
            d["schema"] = body["schema"]
        return _ok({"id": d.pop("id"), "version": d.pop("version"), **d})  # Confluent's field order

    @routes.post("/subjects/" + SUBJECT + "/versions/{version}/tags")
    @responds({200: "RegisterSchemaResponse"}, errors=(*BODY_ERRORS, 404, 409))
    async def modify_tags(request):
        """Confluent's ``modifySchemaTags``: a new version with schema-embedded tags edited."""
        from schema_registry.tags import parse_request
        subject = request.match_info["subject"]
        _valid_subject(subject)
        version = _version(request.match_info["version"])
        req = parse_request(await _body(request))
        e = store.modify_tags(subject, version, req)
        d = e.as_json()
        del d["subject"]
        return _ok({"id": d.pop("id"), "version": d.pop("version"), **d})  # as a registration answers

    def _get_version(request):
        subject = request.match_info["subject"]
        version = _version(request.match_info["version"])
        if "asOf" in request.query and version == "latest":
            return store.version_as_of(subject, parse_as_of(request.query["asOf"]))
        return store.get_version(subject, version, deleted=_flag(request, "deleted"))

    @routes.get("/subjects/" + SUBJECT + "/versions/{version}")
    @responds({200: "Schema"}, errors=(400, 404, 422))
    async def get_version(request):
        e = _get_version(request)
        return _ok(_formatted(request, e, e.as_json()))

    @routes.get("/subjects/" + SUBJECT + "/versions/{version}/schema")
    @responds({200: SCHEMA_TEXT}, errors=(400, 404, 422))
    async def get_version_schema(request):
        return _raw(_get_version(request).schema)

    @routes.get("/subjects/" + SUBJECT + "/versions/{version}/referencedby")
    @responds({200: array(INT32)}, errors=(400, 404, 422))
    async def referenced_by(request):
        e = _get_version(request)
        return _ok(store.referenced_by(e.subject, e.version, deleted=_flag(request, "deleted")))

    @routes.delete("/subjects/" + SUBJECT + "/versions/{version}")
    @responds({200: INT32}, errors=(404, 422))
    async def delete_version(request):
        version = _version(request.match_info["version"])
        return _ok(store.delete_version(request.match_info["subject"], version,
                                        permanent=_flag(request, "permanent")))

    @routes.get("/subjects/" + SUBJECT + "/metadata")
    @responds({200: "Schema"}, errors=(404,))
    async def latest_with_metadata(request):
        subject = request.match_info["subject"]
        wanted = list(zip(request.query.getall("key", []), request.query.getall("value", [])))
        for e in reversed(store.versions(subject, deleted=_flag(request, "deleted"))):
            props = (e.metadata or {}).get("properties") or {}
            if all(props.get(k) == v for k, v in wanted):
                return _ok(e.as_json())
        raise E.version_not_found("with the given metadata")

    @routes.post("/subjects/" + SUBJECT)
    @responds({200: "Schema"}, errors=(*BODY_ERRORS, 404))
    async def lookup(request):
        body = await _body(request)
        if not isinstance(body.get("schema"), str):
            raise E.invalid_schema("Empty schema")
        e = store.lookup(request.match_info["subject"], body, normalize=_flag(request, "normalize"),
                         deleted=_flag(request, "deleted"))
        return _ok(e.as_json())

    @routes.delete("/subjects/" + SUBJECT)
    @responds({200: array(INT32)}, errors=(404, 422))
    async def delete_subject(request):
        return _ok(store.delete_subject(request.match_info["subject"], permanent=_flag(request, "permanent")))

    # ---- compatibility --------------------------------------------------------------------------
    async def _compat(request, versions):
        from schema_registry.compatibility import check
        subject = request.match_info["subject"]
        body = await _body(request)
        if not isinstance(body.get("schema"), str):
            raise E.invalid_schema("Empty schema")
        parsed, *_ = store.prepare(subject, body, _flag(request, "normalize"))
        level = store.level(subject)
        previous = [store.parsed_entry(e) for e in versions]
        if len(versions) == 1:
            errors = []
            from schema_registry.compatibility import directions
            for d in directions(level):
                errors.extend(parsed.compatibility_errors(previous[0], d, store.policy(subject)))
        else:
            errors = check(parsed, previous, level, store.policy(subject))
        out = {"is_compatible": not errors}
        if _flag(request, "verbose"):
            out["messages"] = errors
        return _ok(out)

    @routes.post("/compatibility/subjects/" + SUBJECT + "/versions/{version}")
    @responds({200: "CompatibilityCheckResponse"}, errors=(*BODY_ERRORS, 404))
    async def compat_version(request):
        subject = request.match_info["subject"]
        version = _version(request.match_info["version"])
        try:
            e = store.get_version(subject, version)
        except E.RegistryError as err:
            if err.error_code not in (40401, 40402):
                raise
            if version != "latest":  # Confluent: any missing (subject, version) is 40402
                raise E.version_not_found(version) from None
            await _body(request)
            return _ok({"is_compatible": True, **({"messages": []} if _flag(request, "verbose") else {})})
        return await _compat(request, [e])

    @routes.post("/compatibility/subjects/" + SUBJECT + "/versions")
    @responds({200: "CompatibilityCheckResponse"}, errors=(*BODY_ERRORS, 404))
    async def compat_all(request):
        subject = request.match_info["subject"]
        versions = store.state.subjects.get(subject) or {}
        live = [e for _, e in sorted(versions.items()) if not e.deleted]
        return await _compat(request, live)

    # ---- config and mode ------------------------------------------------------------------------
    def _config_answer(cfg: dict) -> dict:
        return {k: v for k, v in cfg.items() if v is not None}

    @routes.get("/config")
    @responds({200: "Config"})
    async def get_global_config(request):
        cfg = dict(store.config(None) or {})
        cfg.setdefault("compatibilityLevel", store.default_level)
        return _ok(_config_answer(cfg))

    @routes.get("/config/" + SUBJECT)
    @responds({200: "Config"}, errors=(404,))
    async def get_config(request):
        subject = request.match_info["subject"]
        cfg = store.config(subject)
        if cfg is None or not cfg:
            if not _flag(request, "defaultToGlobal"):
                raise E.subject_config_not_found(subject)
            cfg = dict(store.config(None) or {})
            cfg.setdefault("compatibilityLevel", store.default_level)
        return _ok(_config_answer(cfg))

    async def _put_config(request, subject):
        if subject is not None:
            _valid_subject(subject)
        echo, update = config_update(await _body(request))  # Confluent's typed model, or 422
        store.set_config(subject, update)
        return _ok(echo)

    @routes.put("/config")
    @responds({200: "ConfigUpdateRequest"}, errors=BODY_ERRORS)
    async def put_global_config(request):
        return await _put_config(request, None)

    @routes.put("/config/" + SUBJECT)
    @responds({200: "ConfigUpdateRequest"}, errors=BODY_ERRORS)
    async def put_config(request):
        return await _put_config(request, request.match_info["subject"])

    @routes.delete("/config")
    @responds({200: "Config"})
    async def delete_global_config(request):
        old = store.delete_config(None)
        return _ok(_config_answer({"compatibilityLevel": store.default_level, **old}))

    @routes.delete("/config/" + SUBJECT)
    @responds({200: "Config"}, errors=(404,))
    async def delete_config(request):
        subject = request.match_info["subject"]
        if store.config(subject) is None:
            raise E.subject_config_not_found(subject)
        return _ok(_config_answer(store.delete_config(subject)))

    async def _put_mode(request, subject):
        if subject is not None:
            _valid_subject(subject)
        body = await _body(request)
        mode = body.get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise E.invalid_mode()
        return _ok({"mode": store.set_mode(subject, mode.upper(), force=_flag(request, "force"))})

    @routes.get("/mode")
    @responds({200: "Mode"})
    async def get_global_mode(request):
        return _ok({"mode": store.mode(None)})

    @routes.put("/mode")
    @responds({200: "Mode"}, errors=BODY_ERRORS)
    async def put_global_mode(request):
        return await _put_mode(request, None)

    @routes.get("/mode/" + SUBJECT)
    @responds({200: "Mode"}, errors=(404,))
    async def get_mode(request):
        subject = request.match_info["subject"]
        if subject not in store.state.modes and not _flag(request, "defaultToGlobal"):
            raise E.subject_mode_not_found(subject)
        return _ok({"mode": store.mode(subject)})

    @routes.put("/mode/" + SUBJECT)
    @responds({200: "Mode"}, errors=BODY_ERRORS)
    async def put_mode(request):
        return await _put_mode(request, request.match_info["subject"])

    @routes.delete("/mode/" + SUBJECT)
    @responds({200: "DeletedMode"}, errors=(404,))
    async def delete_mode(request):
        return _delete_mode(request, request.match_info["subject"])

    @routes.delete("/mode")
    @responds({200: "DeletedMode"}, errors=(404,))
    async def delete_global_mode(request):
        return _delete_mode(request, None)

    def _delete_mode(request, subject):
        """Confluent's deleteSubjectMode: 40401 when no mode is set there (unless recursive);
        ``recursive=true`` on the global mode also clears every subject's mode."""
        recursive = _flag(request, "recursive")
        old = store.state.modes.get(subject)
        if old is None and not recursive:
            raise E.subject_not_found(subject if subject is not None else "null")
        store.delete_mode(subject, recursive=recursive)
        return _ok({"mode": old} if old is not None else {})

    # ---- contexts, server metadata, GUIDs -------------------------------------------------------
    @routes.delete("/contexts/{context}")
    @responds({204: None}, errors=(404, 422))
    async def delete_context(request):
        """Only the default context exists here; deleting it is refused while it holds a subject
        (even a soft-deleted one), any other context is empty: 204 as Confluent answers."""
        context = request.match_info["context"]
        if context in (".", ":.:", "") and store.state.subjects:
            raise E.context_not_empty(context)
        return web.Response(status=204)

    @routes.get("/v1/metadata/version")
    @responds({200: "SchemaRegistryServerVersion"})
    async def metadata_version(request):
        from broker import __version__
        return _ok({"version": __version__, "commitId": "unknown"})

    @routes.get("/v1/metadata/deployment")
    @responds({200: "SchemaRegistryDeployment"})
    async def metadata_deployment(request):
        return _ok({"attributes": []})  # no schema.registry.metadata.deployment.attributes

    @routes.get("/schemas/guids/{guid}/ids")
    @responds({200: array("ContextId")})
    async def ids_by_guid(request):
        e = store.schema_by_guid(request.match_info["guid"])
        return _ok([] if e is None else [{"context": ".", "id": e.id}])

    # ---- associations (Confluent 8.3; associations.enable) -------------------------------------
    if associations:
        _association_routes(routes, store)
    else:  # off, as Confluent's registry with associations.enable=false: no such resource
        @responds({}, errors=(404,))
        async def _not_served(request):
            raise HttpError(404, 404, "HTTP 404 Not Found")

        for method in ("GET", "POST", "PUT", "DELETE"):
            routes.route(method, "/associations{tail:(/.*|:.*)?}")(_not_served)

    return routes


def _association_query(request) -> dict:
    """The filters every association listing takes (resourceType defaults to topic)."""
    from schema_registry import associations as A
    lifecycle = request.query.get("lifecycle")
    if lifecycle is not None and lifecycle.upper() not in (A.STRONG, A.WEAK):
        raise HttpError(404, 404, "HTTP 404 Not Found")  # Jersey: an unconvertible query param
    return {"resource_type": request.query.get("resourceType") or A.TOPIC,
            "types": request.query.getall("associationType", []),
            "lifecycle": lifecycle.upper() if lifecycle else None}


def _page(request, items: list) -> list:
    """offset/limit as Confluent pages a listing (a negative limit: everything)."""
    def num(name, default):
        raw = request.query.get(name)
        try:
            return default if raw is None else int(raw)
        except ValueError:
            raise HttpError(404, 404, "HTTP 404 Not Found") from None
    offset, limit = max(num("offset", 0), 0), num("limit", -1)
    return items[offset:] if limit < 0 else items[offset:offset + limit]


def _association_routes(routes: web.RouteTableDef, store: SchemaStore) -> None:
    from schema_registry import associations as A

    def listing(request, found):
        may_read = request.get(MAY_READ, lambda s: True)  # only the caller's subjects (ACLs on)
        return _ok(_page(request, [a.as_json() for a in found if may_read(a.subject)]))

    @routes.get("/associations/subjects/" + SUBJECT)
    @responds({200: array("Association")})
    async def associations_by_subject(request):
        return listing(request, store.associations_where(subject=request.match_info["subject"],
                                                         **_association_query(request)))

    @routes.get("/associations/resources/{resourceNamespace}/{resourceName}")
    @responds({200: array("Association")})
    async def associations_by_resource_name(request):
        return listing(request, store.associations_where(
            resource_name=request.match_info["resourceName"],
            resource_namespace=request.match_info["resourceNamespace"], **_association_query(request)))

    @routes.get("/associations/resources/{resourceId}")
    @responds({200: array("Association")})
    async def associations_by_resource_id(request):
        return listing(request, store.associations_where(resource_id=request.match_info["resourceId"],
                                                         **_association_query(request)))

    async def write(request, create: bool, resource_id: str | None):
        req = A.parse_request(await _body(request), resource_id)
        check = request.get(MAY_WRITE)
        if check is not None:  # SUBJECT_WRITE on every subject the request names
            for info in req.infos:
                check(info.subject if info.subject is not None
                      else A.default_subject(req, info.association_type or A.VALUE))
        return _ok(store.write_associations(req, create=create, dry_run=_flag(request, "dryRun")))

    @routes.post("/associations")
    @responds({200: "AssociationResponse"}, errors=(*BODY_ERRORS, 409))
    async def create_association(request):
        return await write(request, True, None)

    @routes.put("/associations/resources/{resourceId}")
    @responds({200: "AssociationResponse"}, errors=(*BODY_ERRORS, 409))
    async def upsert_association(request):
        return await write(request, False, request.match_info["resourceId"])

    async def batch(request, parse, apply, failed) -> web.Response:
        """A batch: the body parsed whole (a shape error fails it), then each item applied and
        answered on its own, its error in its place (207)."""
        items = [parse(item) for item in A.batch_items(await _body(request))]
        results = []
        for item in items:
            try:
                results.append(apply(item))
            except HttpError as err:
                results.append(failed(err))
        return _ok({"results": results}, A.BATCH_STATUS)

    @routes.post("/associations:batchGet")
    @responds({A.BATCH_STATUS: "AssociationBatchResponse"}, errors=BODY_ERRORS)
    async def batch_get_associations(request):
        may_read, include = request.get(MAY_READ), _flag(request, "includeSchemas")
        return await batch(request, A.parse_get_query, lambda q: store.batch_get_association(
            q, include_schemas=include, may_read=may_read), A.get_error)

    @routes.post("/associations:batchMutate")
    @responds({A.BATCH_STATUS: "AssociationBatchResponse"}, errors=BODY_ERRORS)
    async def batch_mutate_associations(request):
        may_write, dry_run = request.get(MAY_WRITE), _flag(request, "dryRun")
        return await batch(request, A.parse_op_request, lambda item: store.mutate_association(
            item, dry_run=dry_run, may_write=may_write), A.mutate_error)

    @routes.delete("/associations/resources/{resourceId}")
    @responds({204: None}, errors=(404, 409, 422))
    async def delete_associations(request):
        resource_id = request.match_info["resourceId"]
        q = _association_query(request)
        check = request.get(MAY_WRITE)
        if check is not None:  # SUBJECT_DELETE on every subject the delete touches
            for a in store.associations_where(resource_id=resource_id, resource_type=q["resource_type"],
                                              types=q["types"]):
                check(a.subject, "SUBJECT_DELETE")
        store.delete_associations(resource_id, q["resource_type"], q["types"],
                                  cascade=_flag(request, "cascadeLifecycle"), dry_run=_flag(request, "dryRun"))
        return web.Response(status=204)


def _authz_middleware(store: SchemaStore):
    """Confluent's Topic ACL authorizer over the broker's ACLs (``schema_registry.authz``)."""
    from schema_registry import authz

    @web.middleware
    async def authorize(request: web.Request, handler):
        security = store.broker.security
        authorizer = security.authorizer if security is not None else None
        if authorizer is None:
            return await handler(request)
        info = request.match_info
        if info.http_exception is not None or info.route.resource is None:
            return await handler(request)  # no such route: 404/405 as without ACLs
        route = info.route.resource.canonical
        need = authz.need(request.method, route)
        principal, host = request["principal"], request.remote or ""
        request[MAY_READ] = lambda subject: authz.may(authorizer, principal, host, authz.Op.READ, subject)

        def may_write(subject: str, operation: str = "SUBJECT_WRITE") -> None:
            if not authz.may(authorizer, principal, host, authz.Op.WRITE, subject):
                raise HttpError(403, 40301, f"User is denied operation {operation} on Subject: {subject}")

        request[MAY_WRITE] = may_write
        if need.kind == authz.SUBJECT:
            subject = info["subject"]
            if not authz.may(authorizer, principal, host, need.op, subject):
                raise HttpError(403, 40301, f"User is denied operation {need.operation} on Subject: {subject}")
        elif need.kind == authz.SCHEMA:
            ref = info.get("id") or info.get("guid")
            if "guid" in info:
                e = store.schema_by_guid(ref)
                holders = store.state.ids.get(e.id) or {} if e is not None else {}
            else:
                holders = store.state.ids.get(int(ref)) or {} if ref.lstrip("-").isdigit() else {}
            if holders and not any(authz.may(authorizer, principal, host, need.op, s) for s, _ in holders):
                raise HttpError(403, 40301, f"User is denied operation SCHEMA_READ on Schema: {ref}")
        elif need.kind == authz.GLOBAL and principal not in authorizer.super_users:
            raise HttpError(403, 40301, f"User is denied operation {need.operation} on Global")
        return await handler(request)

    return authorize


def _negotiate_middleware():
    """Accept negotiation as Confluent's Jersey resources do: the chosen type is the answer's
    Content-Type (errors too); an Accept nothing matches is 406."""

    @web.middleware
    async def negotiate_type(request: web.Request, handler):
        chosen = negotiate(request.headers.get("Accept"))
        if chosen is None:
            return error_response(406, 406, "HTTP 406 Not Acceptable", CONTENT_TYPE)
        resp = await handler(request)
        if chosen != CONTENT_TYPE and resp.headers.get("Content-Type") == CONTENT_TYPE:
            resp.headers["Content-Type"] = chosen
        return resp

    return negotiate_type


def _ready_middleware(store: SchemaStore, stats: collections.Counter):
    @web.middleware
    async def ready(request: web.Request, handler):
        if not store.ready.is_set():
            await store.ready.wait()
        if store.load_error is not None:
            raise E.store_error(f"Error while loading the schema registry from {store.topic}: {store.load_error}")
        store.catch_up()
        return await handler(request)

    @web.middleware
    async def count(request: web.Request, handler):
        resp = await handler(request)
        stats[resp.status] += 1
        return resp

    return count, ready


async def create_app(broker, users: BrokerUsers) -> web.Application:
    cfg = broker.cfg
    store = SchemaStore(broker, topic=cfg["kafkastore.topic"], default_level=cfg["schema.compatibility.level"].upper())
    stats: collections.Counter = collections.Counter()
    count, ready = _ready_middleware(store, stats)
    method = (cfg["authentication.method"] or "").upper()
    required = {"NONE": False, "BASIC": True}.get(method)  # unset: as the Kafka listeners (BrokerUsers)
    app = web.Application(client_max_size=MAX_BODY, middlewares=[
        count, _negotiate_middleware(),
        *middlewares(users, content_type=CONTENT_TYPE, internal_error_code=50001,
                     realm="SchemaRegistry", required=required), ready, _authz_middleware(store)])
    app[STORE_KEY] = store
    app[STATS_KEY] = stats
    add_routes_slash_tolerant(app, create_routes(store, associations=cfg["associations.enable"]))
    broker.schema_registry = store
    store.request_stats = stats
    import asyncio
    store.load_task = asyncio.get_running_loop().create_task(store.load(), name="schema-registry-load")

    async def stop(_app):
        if not store.load_task.done():
            store.load_task.cancel()
            await asyncio.gather(store.load_task, return_exceptions=True)
        if broker.schema_registry is store:
            broker.schema_registry = None

    app.on_cleanup.append(stop)
    return app
