"""Who may do what: Confluent's Topic ACL authorizer over the broker's own Kafka ACLs (pure).

When the broker has an authorizer (``authorizer.class.name``), each route needs what
Confluent's ``SimpleTopicAclAuthorizer`` asks for, checked against the broker's ACLs for the
topic a subject names (``<topic>-key``/``<topic>-value``, TopicNameStrategy; any other subject
is taken as the topic name itself):

    SUBJECT_READ                 TOPIC READ    GET /subjects/{s}/versions[/...], POST /subjects/{s}, GET /subjects/{s}/metadata
    SUBJECT_WRITE                TOPIC WRITE   POST /subjects/{s}/versions, POST /compatibility/subjects/{s}/...
    SUBJECT_DELETE               TOPIC WRITE   DELETE /subjects/{s}[/versions/{v}]
    SUBJECT_COMPATIBILITY_READ   TOPIC READ    GET /config/{s}, GET /mode/{s}
    SUBJECT_COMPATIBILITY_WRITE  TOPIC WRITE   PUT|DELETE /config/{s}, PUT|DELETE /mode/{s}
    SCHEMA_READ                  TOPIC READ on a topic of one of the id's subjects    GET /schemas/ids/{id}[/...], /schemas/guids/{guid}[/ids]
    GLOBAL_*                     super user    /config, /mode (global)

Listings (``GET /subjects``, ``GET /schemas``) answer only the subjects the caller may read, as
the broker leaves out topics a client may not describe (Confluent's plugin asks a super user
there). ``/``, ``/schemas/types``, ``/contexts`` and ``/v1/metadata/{id,version,deployment}`` need only
authentication. A denial is 403 with error code 40301.

Routes Confluent's operation table does not list are decided by the operation they are (a
subject read or write needs what those need), so no user who may use a subject is refused a
route the serializers use on it:

    SUBJECT_WRITE                POST /subjects/{s}/versions/{v}/tags (registers a version)
    SUBJECT_READ                 GET /associations/subjects/{s}
    (listing)                    GET /associations/resources/{ns}/{name}, /associations/resources/{id}:
                                 the associations of subjects the caller may read (confluent-kafka's
                                 serializers look these up before each subject; an ordinary user gets
                                 its own, or none, never a 403)
    SUBJECT_WRITE / _DELETE      POST /associations, PUT|DELETE /associations/resources/{id}: on every
                                 subject the request names or the delete touches (the handler checks,
                                 as the subjects are in the body or the store)
    (per item)                   POST /associations:batchGet answers each item's associations of subjects
                                 the caller may read; POST /associations:batchMutate checks each item's
                                 ops as their single routes (SUBJECT_WRITE per create/upsert subject,
                                 SUBJECT_DELETE per subject a delete removes): a denied item is that
                                 item's 40301 error in the 207 answer, the other items are applied
    (authentication)             /v1/metadata/version, /v1/metadata/deployment: server metadata, like
                                 /v1/metadata/id; Confluent's operation table maps none of the three
                                 to an operation, so its authorizer asks for none

With ``associations.enable=false`` the association routes do not exist: 404, as without ACLs.
"""
from __future__ import annotations

from typing import NamedTuple

from broker.security.acl import AclOperation as Op, ResourceType as RT

PUBLIC, SUBJECT, SCHEMA, GLOBAL, LISTING, PER_SUBJECT = "public", "subject", "schema", "global", "listing", "per-subject"


class Need(NamedTuple):
    kind: str  # PUBLIC, SUBJECT, SCHEMA, GLOBAL, LISTING or PER_SUBJECT
    op: Op | None = None
    operation: str = ""  # Confluent's operation name, for the denial message


_SUBJECT_RULES = {
    ("GET", "/subjects/{subject}/versions"): (Op.READ, "SUBJECT_READ"),
    ("GET", "/subjects/{subject}/versions/{version}"): (Op.READ, "SUBJECT_READ"),
    ("GET", "/subjects/{subject}/versions/{version}/schema"): (Op.READ, "SUBJECT_READ"),
    ("GET", "/subjects/{subject}/versions/{version}/referencedby"): (Op.READ, "SUBJECT_READ"),
    ("GET", "/subjects/{subject}/metadata"): (Op.READ, "SUBJECT_READ"),
    ("POST", "/subjects/{subject}"): (Op.READ, "SUBJECT_READ"),
    ("POST", "/subjects/{subject}/versions"): (Op.WRITE, "SUBJECT_WRITE"),
    ("POST", "/compatibility/subjects/{subject}/versions"): (Op.WRITE, "SUBJECT_WRITE"),
    ("POST", "/compatibility/subjects/{subject}/versions/{version}"): (Op.WRITE, "SUBJECT_WRITE"),
    ("DELETE", "/subjects/{subject}"): (Op.WRITE, "SUBJECT_DELETE"),
    ("DELETE", "/subjects/{subject}/versions/{version}"): (Op.WRITE, "SUBJECT_DELETE"),
    ("GET", "/config/{subject}"): (Op.READ, "SUBJECT_COMPATIBILITY_READ"),
    ("GET", "/mode/{subject}"): (Op.READ, "SUBJECT_COMPATIBILITY_READ"),
    ("PUT", "/config/{subject}"): (Op.WRITE, "SUBJECT_COMPATIBILITY_WRITE"),
    ("DELETE", "/config/{subject}"): (Op.WRITE, "SUBJECT_COMPATIBILITY_WRITE"),
    ("PUT", "/mode/{subject}"): (Op.WRITE, "SUBJECT_COMPATIBILITY_WRITE"),
    ("DELETE", "/mode/{subject}"): (Op.WRITE, "SUBJECT_COMPATIBILITY_WRITE"),
    ("POST", "/subjects/{subject}/versions/{version}/tags"): (Op.WRITE, "SUBJECT_WRITE"),
    ("GET", "/associations/subjects/{subject}"): (Op.READ, "SUBJECT_READ"),
}
# checked per subject by the handler (the subjects are in the body or the store)
_PER_SUBJECT = {("POST", "/associations"), ("PUT", "/associations/resources/{resourceId}"),
                ("DELETE", "/associations/resources/{resourceId}")}
_PER_SUBJECT |= {("POST", "/associations:batchMutate")}
_ASSOCIATION_LISTINGS = {"/associations/resources/{resourceNamespace}/{resourceName}",
                         "/associations/resources/{resourceId}"}
_PUBLIC = {"/", "/schemas/types", "/contexts", "/v1/metadata/id", "/v1/metadata/version", "/v1/metadata/deployment"}
_LISTINGS = {"/subjects", "/schemas"}


def need(method: str, route: str) -> Need:
    """What the route (aiohttp's canonical path, e.g. ``/subjects/{subject}/versions``) needs."""
    if route != "/":
        route = route.rstrip("/")  # the same resource under a trailing slash
    if method == "HEAD":
        method = "GET"  # HEAD is a GET without its body (Jersey's, aiohttp's) and needs the same
    if route in _PUBLIC or route == "/associations{tail}":
        return Need(PUBLIC)  # (the second: associations.enable=false, no such resource)
    if method == "GET" and route in _LISTINGS:
        return Need(LISTING, Op.READ, "GLOBAL_SUBJECTS_READ")
    if (method == "GET" and route in _ASSOCIATION_LISTINGS) or (method, route) == ("POST", "/associations:batchGet"):
        return Need(LISTING, Op.READ, "SUBJECT_READ")
    if (method, route) in _PER_SUBJECT:
        return Need(PER_SUBJECT, Op.WRITE, "SUBJECT_WRITE")
    rule = _SUBJECT_RULES.get((method, route))
    if rule is not None:
        return Need(SUBJECT, *rule)
    if route.startswith("/schemas/ids/{id}") or route.startswith("/schemas/guids/{guid}"):
        return Need(SCHEMA, Op.READ, "SCHEMA_READ")
    read = method in ("GET", "HEAD")
    return Need(GLOBAL, None, "GLOBAL_COMPATIBILITY_READ" if read else "GLOBAL_COMPATIBILITY_WRITE")


def topic_of(subject: str) -> str:
    """The topic a subject names under TopicNameStrategy (the subject itself otherwise)."""
    for suffix in ("-key", "-value"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)]
    return subject


def may(authorizer, principal: str, host: str, op: Op, subject: str) -> bool:
    return authorizer.authorize(principal, host, op, RT.TOPIC, topic_of(subject))
