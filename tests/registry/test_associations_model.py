"""The pure decisions behind issue 44's registry items: association requests
(``schema_registry.associations``, Confluent 8.3's rules), unknown Protobuf options dropped
from the text (``strip_options``), and which authorization every route needs
(``schema_registry.authz.need``)."""
from __future__ import annotations

import pytest

from schema_registry import associations as A
from schema_registry import authz
from schema_registry.errors import RegistryError
from schema_registry.formats.protobuf import strip_options


def req(*infos, name="orders", ns="lkc-1", rid="r1", rtype=None):
    return A.parse_request({"resourceName": name, "resourceNamespace": ns, "resourceId": rid, "resourceType": rtype,
                            "associations": list(infos)})


def code(fn, *args):
    with pytest.raises(RegistryError) as e:
        fn(*args)
    return e.value.status, e.value.error_code, str(e.value)


def stored(subject, assoc_type="value", lifecycle=A.WEAK, frozen=False, rid="r1"):
    return A.Association("g", "orders", "lkc-1", rid, "topic", assoc_type, subject, lifecycle, frozen)


def test_validate_fills_confluents_defaults():
    r = req({"subject": "s-value"})
    A.validate(r, create=True, dry_run=False)
    info, = r.infos
    assert (r.resource_type, info.association_type, info.lifecycle, info.frozen) == ("topic", "value", "WEAK", False)
    r = req({"schema": {"schema": '"string"'}, "associationType": "key"})
    A.validate(r, create=True, dry_run=False)
    info, = r.infos
    assert (info.subject, info.lifecycle, info.frozen) == (":.lkc-1:orders-key", "STRONG", True)
    A.validate(req({"subject": "s"}, rid=None), create=True, dry_run=True)  # a dry run needs no resource id


@pytest.mark.parametrize("body, prop", [
    ({"resourceName": "", "resourceNamespace": "n", "resourceId": "r", "associations": [{"subject": "s"}]}, "resourceName"),
    ({"resourceName": "t", "resourceNamespace": "n", "associations": [{"subject": "s"}]}, "resourceId"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r", "resourceType": "table",
      "associations": [{"subject": "s"}]}, "resourceType"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r", "associations": []}, "associations"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": "s", "associationType": "header"}]}, "associationType"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": "s"}, {"subject": "u"}]}, "associationType"),  # "value" twice
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"lifecycle": "WEAK"}]}, "subject"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": "s", "lifecycle": "WEAK", "schema": {"schema": "1"}}]}, "lifecycle"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": "s", "lifecycle": "WEAK", "frozen": True}]}, "frozen"),
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": "s", "schema": {"schema": "1"}}]}, "subject"),  # frozen: default subject only
    ({"resourceName": "t", "resourceNamespace": "n", "resourceId": "r",
      "associations": [{"subject": ":.n:t-value", "lifecycle": "WEAK"}]}, "subject"),
])
def test_validate_refuses_as_confluent(body, prop):
    status, error_code, message = code(lambda: A.validate(A.parse_request(body), True, False))
    assert (status, error_code) == (422, 42212) and f"property: '{prop}'" in message


def never(*_):
    raise AssertionError("not asked")


def test_plan_equivalent_create_is_skipped_and_a_different_one_conflicts():
    r = req({"subject": "s-value"})
    A.validate(r, True, False)
    existing = {"value": stored("s-value")}
    assert A.plan(r, True, existing, lambda s: [existing["value"]], lambda s: True, never) == {"value"}
    r = req({"subject": "other-value"})
    A.validate(r, True, False)
    assert code(A.plan, r, True, existing, lambda s: [], lambda s: True, never)[:2] == (409, 40903)


def test_plan_subject_rules():
    r = req({"subject": "s-value", "lifecycle": "STRONG"})
    A.validate(r, True, False)
    other = stored("s-value", rid="elsewhere")
    assert code(A.plan, r, True, {}, lambda s: [other], lambda s: True, never)[:2] == (409, 40904)
    r = req({"subject": "s-value"})
    A.validate(r, True, False)
    strong = stored("s-value", lifecycle=A.STRONG, rid="elsewhere")
    assert code(A.plan, r, True, {}, lambda s: [strong], lambda s: True, never)[:2] == (409, 40905)
    assert code(A.plan, r, True, {}, lambda s: [], lambda s: False, never)[:2] == (409, 40907)
    assert A.plan(r, True, {}, lambda s: [], lambda s: True, never) == set()


def test_plan_updates():
    frozen = stored(":.lkc-1:orders-value", lifecycle=A.STRONG, frozen=True)
    r = req({"lifecycle": "STRONG", "associationType": "value", "frozen": False})
    A.validate(r, False, False)
    assert code(A.plan, r, False, {"value": frozen}, lambda s: [], lambda s: True, never)[1] == 42212
    r = req({"lifecycle": "STRONG"})
    A.validate(r, False, False)
    assert A.plan(r, False, {"value": frozen}, lambda s: [frozen], lambda s: True, never) == {"value"}
    weak = stored("s-value")
    r = req({"subject": "t-value", "lifecycle": "STRONG"})
    A.validate(r, False, False)
    status, error_code, message = code(A.plan, r, False, {"value": weak}, lambda s: [], lambda s: True, never)
    assert error_code == 42212 and "cannot be changed" in message
    r = req({"lifecycle": "STRONG"})
    A.validate(r, False, False)
    assert A.plan(r, False, {"value": weak}, lambda s: [weak], lambda s: True, never) == set()
    assert A.stored(r, r.infos[0], weak, "new-guid", 5).lifecycle == "STRONG"


def test_response_and_entity_shapes():
    r = req({"subject": "s-value"})
    A.validate(r, True, False)
    assert A.response(r, [], {}) == {"resourceName": "orders", "resourceNamespace": "lkc-1", "resourceId": "r1",
                                     "resourceType": "topic"}
    a = A.stored(r, r.infos[0], None, "g1", 7)
    assert A.response(r, [a], {})["associations"] == [
        {"subject": "s-value", "associationType": "value", "lifecycle": "WEAK", "frozen": False}]
    assert a.as_json()["createTs"] == 7 and "updateTs" not in a.as_json()


@pytest.mark.parametrize("text, needles, want", [
    ('option (a) = 1;\nmessage M {}\n', ["(a)"], '\nmessage M {}\n'),
    ('message M { int32 f = 1 [(a) = "x;]", deprecated = true]; }', ["(a)"],
     'message M { int32 f = 1 [deprecated = true]; }'),
    ('message M { int32 f = 1 [deprecated = true, (a.b).c = { x: "}" y { z: 1 } }]; }', ["(a.b)"],
     'message M { int32 f = 1 [deprecated = true]; }'),
    ('message M { int32 f = 1 [(a) = 1]; }', ["(a)"], 'message M { int32 f = 1; }'),
    ('message M {\n  option (a) = { k: [1, 2] };\n  int32 f = 1 [(b) = 2, (c) = 3];\n}', ["(a)", "(b)", "(c)"],
     'message M {\n  \n  int32 f = 1;\n}'),
    ('enum E { A = 0 [(v) = "s" "t"]; }', ["(v)"], 'enum E { A = 0; }'),
])
def test_strip_options(text, needles, want):
    """Each option goes from where protoc places it ((line, column) of its name)."""
    places = []
    for needle in needles:
        before = text[:text.index(needle)]
        places.append((before.count("\n"), len(before) - (before.rfind("\n") + 1)))
    assert strip_options(text, places) == want


@pytest.mark.parametrize("method, route, kind, operation", [
    ("GET", "/associations/resources/{resourceNamespace}/{resourceName}", authz.LISTING, "SUBJECT_READ"),
    ("GET", "/associations/resources/{resourceId}", authz.LISTING, "SUBJECT_READ"),
    ("GET", "/associations/subjects/{subject}", authz.SUBJECT, "SUBJECT_READ"),
    ("POST", "/associations", authz.PER_SUBJECT, "SUBJECT_WRITE"),
    ("PUT", "/associations/resources/{resourceId}", authz.PER_SUBJECT, "SUBJECT_WRITE"),
    ("DELETE", "/associations/resources/{resourceId}", authz.PER_SUBJECT, "SUBJECT_WRITE"),
    ("POST", "/associations{tail}", authz.PUBLIC, ""),  # associations.enable=false: 404 for all
    ("POST", "/subjects/{subject}/versions/{version}/tags", authz.SUBJECT, "SUBJECT_WRITE"),
    ("GET", "/schemas/guids/{guid}/ids", authz.SCHEMA, "SCHEMA_READ"),
    ("POST", "/subjects/{subject}/versions", authz.SUBJECT, "SUBJECT_WRITE"),
    ("POST", "/subjects/{subject}", authz.SUBJECT, "SUBJECT_READ"),
    ("PUT", "/config", authz.GLOBAL, "GLOBAL_COMPATIBILITY_WRITE"),
])
def test_what_each_route_needs(method, route, kind, operation):
    need = authz.need(method, route)
    assert (need.kind, need.operation) == (kind, operation)


def test_every_served_route_that_a_serializer_uses_needs_no_super_user():
    """Every registry route but the global config, mode and context ones is decided per
    subject (or open): no route an ordinary producer or consumer uses asks for a super user."""
    from aiohttp import web
    from schema_registry.app import create_routes
    app = web.Application()
    app.add_routes(create_routes(store=None))
    global_only = set()
    for route in app.router.routes():
        need = authz.need(route.method, route.resource.canonical)
        if need.kind == authz.GLOBAL:
            global_only.add((route.method, route.resource.canonical))
    assert {r for _, r in global_only} <= {"/config", "/mode", "/contexts/{context}"}, global_only


# ---- names, deletes, batches (Confluent 8.3.1) ------------------------------------------------------
import unicodedata  # noqa: E402

from hypothesis import given, strategies as st  # noqa: E402


def _name_ok_model(value: str) -> bool:
    """RestValidation.checkName brute force: every UTF-16 unit a letter, digit, _ or -."""
    units = value.encode("utf-16-le", "surrogatepass")
    chars = [int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2)]
    return 0 < len(chars) <= 256 and all(
        c in (ord("_"), ord("-")) or (not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) in
                                     ("Lu", "Ll", "Lt", "Lm", "Lo", "Nd")) for c in chars)


@given(st.text(alphabet=st.one_of(st.sampled_from("ab_-9.:/ "), st.characters()), max_size=260)
       | st.text(alphabet="a", min_size=250, max_size=260))
def test_check_name_accepts_exactly_what_confluent_accepts(value):
    try:
        A.check_name(value, "resourceName")
        ok = True
    except RegistryError as e:
        assert (e.status, e.error_code) == (422, 42212) and "'resourceName'" in e.message
        ok = False
    assert ok == _name_ok_model(value)


@pytest.mark.parametrize("subject, ok", [("s", True), (":.lkc:t-value", True), ("", False), ("a\tb", False),
                                         ("a\x7fb", False), ("a\x9fb", False), ("a\xa0b", True)])
def test_check_subject_refuses_empty_and_iso_controls(subject, ok):
    if ok:
        A.check_subject(subject)
    else:
        assert code(A.check_subject, subject)[:2] == (422, 42212)


@given(associated=st.booleans(), permanent=st.booleans(), others_live=st.one_of(st.none(), st.booleans()))
def test_check_delete_against_confluents_rules(associated, permanent, others_live):
    """A subject with an association is never deleted (40904); one of its versions only softly,
    and not its last live one (40907); nothing stops either without an association."""
    try:
        A.check_delete("s", associated, permanent, others_live)
        got = None
    except RegistryError as e:
        got = e.error_code
    if not associated:
        want = None
    elif others_live is None or permanent:
        want = 40904
    else:
        want = None if others_live else 40907
    assert got == want


def op_item(*ops, name="orders", ns="lkc-1", rid="r1", rtype=None):
    return A.parse_op_request({"resourceName": name, "resourceNamespace": ns, "resourceId": rid,
                               "resourceType": rtype, "associations": list(ops)})


def test_plan_ops_validates_every_op_as_its_single_route_and_fills_defaults():
    steps = A.plan_ops(op_item({"opType": "CREATE", "schema": {"schema": '"string"'}},
                               {"opType": "DELETE", "associationType": "key", "cascadeLifecycle": True},
                               {"opType": "UPSERT", "associationType": "key", "lifecycle": "strong"}), False)
    (create, single), (delete, none), (upsert, single2) = steps
    assert (single.infos[0].subject, single.infos[0].lifecycle, single.infos[0].frozen) == (
        ":.lkc-1:orders-value", "STRONG", True)
    assert none is None and (delete.association_type, delete.cascade) == ("key", True)
    assert (single2.infos[0].subject, single2.infos[0].lifecycle) == (None, "STRONG")  # the stored one's
    assert A.plan_ops(op_item({"opType": "DELETE"}), False)[0][0].association_type == "value"
    assert A.plan_ops(op_item({"opType": "CREATE", "subject": "s", "lifecycle": "WEAK"}, rid=None), True)


@pytest.mark.parametrize("item, prop", [
    (dict(name=""), "resourceName"),
    (dict(ns="a.b"), "resourceNamespace"),
    (dict(rid=None), "resourceId"),
    (dict(rtype="table"), "resourceType"),
])
def test_plan_ops_refuses_a_bad_resource(item, prop):
    status, error_code, message = code(A.plan_ops, op_item({"opType": "DELETE"}, **item), False)
    assert (status, error_code) == (422, 42212) and f"property: '{prop}'" in message


@pytest.mark.parametrize("op, prop", [
    ({"opType": "DELETE", "associationType": "header"}, "associationType"),
    ({"opType": "CREATE", "lifecycle": "WEAK"}, "subject"),  # a WEAK create names its subject
    ({"opType": "CREATE", "subject": ":.lkc-1:orders-value", "lifecycle": "WEAK"}, "subject"),
    ({"opType": "CREATE", "subject": "s", "schema": {"schema": "1"}}, "subject"),  # frozen: the default
    ({"opType": "UPSERT", "subject": "s", "lifecycle": "WEAK", "frozen": True}, "frozen"),
    ({"opType": "UPSERT", "subject": ""}, "subject"),
])
def test_plan_ops_refuses_a_bad_op(op, prop):
    status, error_code, message = code(A.plan_ops, op_item({"opType": "DELETE"}, op), False)
    assert (status, error_code) == (422, 42212) and f"property: '{prop}'" in message


@pytest.mark.parametrize("op", [{"subject": "s"}, {"opType": "RENAME"}])
def test_an_op_without_a_known_op_type_fails_the_whole_body(op):
    assert code(A.parse_op_request, {"associations": [op]})[:2] == (422, 422)


def test_batch_items_need_a_non_empty_list():
    assert code(A.batch_items, {})[:2] == (422, 42212)
    assert code(A.batch_items, {"requests": []})[:2] == (422, 42212)
    assert code(A.batch_items, {"requests": {}})[:2] == (422, 422)
    assert A.batch_items({"requests": [{}]}) == [{}]


@pytest.mark.parametrize("item, message", [
    ({}, "property: resourceId; detail: either resourceId or resourceName must be specified"),
    ({"resourceName": "t"}, "property: resourceNamespace; detail: resourceNamespace is required when "
                            "resourceName is specified"),
])
def test_a_bad_get_query_is_its_items_500(item, message):
    q = A.parse_get_query(item)
    with pytest.raises(RegistryError) as e:
        A.validate_get_query(q)
    assert A.get_error(e.value) == {"error": {"error_code": 500,
                                              "message": "Error while getting associations: " + message}}


@given(st.sampled_from([42212, 42201, 40901, 40903, 40904, 40905, 40907, 40908, 42209, 40301,
                        42205, 42206, 40401, 40404, 50001, 500]))
def test_mutate_error_keeps_the_codes_confluent_names_and_makes_the_rest_500(error_code):
    got = A.mutate_error(RegistryError(409, error_code, "m"))["error"]
    if error_code in (42212, 40901, 40903, 40904, 40905, 40907, 40908, 42209, 40301):
        assert got == {"error_code": error_code, "message": "m"}
    elif error_code == 42201:  # an invalid schema in an op
        assert got == {"error_code": 42212, "message": "m"}
    else:
        assert got == {"error_code": 500, "message": "Error while creating association: m"}


def test_resource_response_needs_every_association_of_the_resource():
    a = stored("s-value")
    assert A.resource_response("orders", "lkc-1", "r1", "topic", [a], {})["associations"][0]["subject"] == "s-value"
    assert A.resource_response(None, None, "r9", "topic", [], {}) == {"resourceId": "r9", "resourceType": "topic"}
    assert code(A.resource_response, "orders", "-", "r1", "topic", [a], {})[:2] == (500, 500)


@pytest.mark.parametrize("method, route, kind", [
    ("POST", "/associations:batchGet", authz.LISTING),
    ("POST", "/associations:batchMutate", authz.PER_SUBJECT),
    ("GET", "/v1/metadata/version", authz.PUBLIC),
    ("GET", "/v1/metadata/deployment", authz.PUBLIC),
    ("DELETE", "/contexts/{context}", authz.GLOBAL),
])
def test_batches_and_server_metadata_need(method, route, kind):
    assert authz.need(method, route).kind == kind
