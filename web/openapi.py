"""What each HTTP handler answers, declared on the handler itself, for the OpenAPI document.

A handler is decorated with ``@responds({200: "TopicData"}, errors=(409,))``: the statuses it
answers, each with the component schema of its body (a name in the service's components, an
inline JSON schema, or None for no body), and the error statuses it may answer beyond the
service's common ones. The document (``operation``) is then read from the running router, so
a route cannot be served without saying what it answers, and the generated-request test checks
every answer against the declaration (status code, content type, body schema): a handler that
adds, drops or retypes a field fails that test until the declaration says so.

The schemas are Hourglass's own declarations of Confluent's shapes (field names, types,
required and nullable fields read from Confluent's documentation), with objects closed
(``additionalProperties: false``) so an undeclared field is a failure, not a silent drift
(only a few of Hourglass's own resources leave their inner records open).
"""
from __future__ import annotations

from typing import Any, Callable

ATTR = "openapi_responses"
Schema = dict[str, Any]


def responds(answers: dict[int, str | Schema | None], errors: tuple = ()) -> Callable:
    """Declare on a handler what it answers: ``answers`` maps a success status to its body's
    schema (component name, inline schema, None for no body); ``errors`` adds error statuses
    to the service's common ones (each answered with the service's error schema)."""
    def mark(handler):
        setattr(handler, ATTR, (dict(answers), tuple(errors)))
        return handler
    return mark


def declared(handler) -> tuple[dict, tuple] | None:
    return getattr(handler, ATTR, None)


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema | str) -> Schema:
    """OpenAPI 3.0's nullable (a ``$ref`` cannot carry siblings, so it is wrapped)."""
    if isinstance(schema, str):
        return {"allOf": [ref(schema)], "nullable": True}
    return {**schema, "nullable": True}


def array(items: Schema | str) -> Schema:
    return {"type": "array", "items": ref(items) if isinstance(items, str) else items}


def obj(required: dict[str, Schema | str], optional: dict[str, Schema | str] | None = None, *,
        closed: bool = True) -> Schema:
    """An object with ``required`` fields (present, maybe null where their schema says so) and
    ``optional`` ones (present or absent); closed unless ``closed=False``."""
    def s(v):
        return ref(v) if isinstance(v, str) else v
    props = {k: s(v) for k, v in {**required, **(optional or {})}.items()}
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


STRING: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
INT32: Schema = {"type": "integer", "format": "int32"}
INT64: Schema = {"type": "integer", "format": "int64"}
BOOL: Schema = {"type": "boolean"}
ANY: Schema = {}


def operation_responses(handler, *, content_types: list[str], common_errors: tuple, error_schema: str) -> dict:
    """The OpenAPI ``responses`` of ``handler`` (LookupError when it declares nothing)."""
    found = declared(handler)
    if found is None:
        raise LookupError(f"{getattr(handler, '__qualname__', handler)} declares no responses (web.openapi.responds)")
    answers, errors = found
    out: dict[str, dict] = {}
    for status, schema in answers.items():
        body = None if schema is None else (ref(schema) if isinstance(schema, str) else schema)
        out[str(status)] = {"description": f"{status}"}
        if body is not None:
            out[str(status)]["content"] = {ct: {"schema": body} for ct in content_types}
    for status in (*common_errors, *errors):
        out.setdefault(str(status), {"description": "Error", "content": {
            ct: {"schema": ref(error_schema)} for ct in content_types}})
    return out
