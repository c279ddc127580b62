"""The console's pages in a real browser (Debian's chromium driven by Playwright), against a
running broker, checked against what stock clients (confluent-kafka) and the data dir say.

One broker and one browser per module; each test clicks through one page and keeps a
screenshot in ``test-output/console/`` (ignored by git).
"""
from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from hourglass.embedded import EmbeddedBroker

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
from playwright.sync_api import expect, sync_playwright  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "console"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP = 60_000  # a record a minute


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def wait_done(futures) -> None:
    for f in futures.values():
        f.result(timeout=30)


@pytest.fixture(scope="module")
def cluster():
    with EmbeddedBroker(console=True, schema_registry=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        wait_done(admin.create_topics([
            NewTopic("clicks", 1, 1, config={"segment.bytes": "16384"}),
            NewTopic("orders", 3, 1),
        ]))
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 5, "batch.num.messages": 25})
        for i in range(600):  # ten hours of clicks in batches of 25: times fall inside batches
            p.produce("clicks", key=f"user-{i % 7}", value=json.dumps({"n": i, "page": f"/p/{i % 13}"}),
                      timestamp=T0 + i * STEP, headers=[("source", b"test")])
        for i in range(90):
            p.produce("orders", key=f"order-{i}", value=f"order {i}", timestamp=T0 + i * STEP)
        assert p.flush(30) == 0
        yield b, admin


@pytest.fixture(scope="module")
def browser():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        br = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield br
        br.close()


@pytest.fixture
def page(browser, cluster):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=cluster[0].console_url)
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def shot(pg, name: str) -> None:
    pg.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def cells(pg, selector: str) -> list[list[str]]:
    return pg.eval_on_selector_all(selector, "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))")


def offsets_for_time(bootstrap: str, topic: str, partition: int, ts: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return c.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=10)[0].offset
    finally:
        c.close()


# ---- topics ------------------------------------------------------------------------------------

def test_topics_list_create_and_delete(page, cluster):
    b, admin = cluster
    page.goto("/topics")
    rows = {r[0]: r for r in cells(page, "#topics tbody tr")}
    assert rows["clicks"][1] == "1" and rows["orders"][1] == "3"
    assert rows["clicks"][3] == "delete"
    assert rows["clicks"][4] == iso(T0).replace("T", " ") and rows["clicks"][5] == iso(T0 + 599 * STEP).replace("T", " ")
    shot(page, "topics")

    page.click("text=Create topic")
    page.fill("#create-topic input[name=name]", "made-in-browser")
    page.fill("#create-topic input[name=partitions]", "2")
    page.fill("#create-topic textarea[name=configs]", "retention.ms=3600000")
    page.click("#create-topic button[type=submit]")
    expect(page).to_have_url(re.compile(r"/topics/made-in-browser$"))
    md = admin.list_topics(timeout=10).topics
    assert len(md["made-in-browser"].partitions) == 2
    res = ConfigResource(ConfigResource.Type.TOPIC, "made-in-browser")
    assert admin.describe_configs([res])[res].result(timeout=10)["retention.ms"].value == "3600000"

    page.click("text=Delete topic")
    page.fill("#delete-topic input[name=confirm]", "made-in-browser")
    page.click("#delete-topic button[type=submit]")
    expect(page).to_have_url(re.compile(r"/topics$"))
    assert "made-in-browser" not in admin.list_topics(timeout=10).topics
    assert "made-in-browser" not in page.inner_text("#topics")


def test_topics_search_filters_live(page, cluster):
    page.goto("/topics")
    page.fill("input[name=q]", "ord")
    expect(page.locator("#topics tbody tr")).to_have_count(1)
    assert cells(page, "#topics tbody tr")[0][0] == "orders"


# ---- topic detail ----------------------------------------------------------------------------

def test_partitions_and_segment_timeline_match_the_data_dir(page, cluster):
    b, _ = cluster
    page.goto("/topics/clicks")
    [row] = cells(page, "#partitions tbody tr")
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "probe"})
    lo, hi = c.get_watermark_offsets(TopicPartition("clicks", 0), timeout=10)
    c.close()
    assert (int(row[1]), int(row[2]), int(row[3])) == (lo, hi, hi)  # log start, HWM, LSO (no open txn)
    on_disk = sorted((f.name, f.stat().st_size) for f in (b.data_dir / "clicks-0").glob("*.log"))
    assert len(on_disk) > 2  # 16 KiB segments: several
    shown = page.eval_on_selector_all(
        "#segments tbody tr", "rows => rows.map(r => [r.cells[0].innerText, +r.cells[5].dataset.size])")
    assert [tuple(s) for s in shown] == on_disk
    segs = cells(page, "#segments tbody tr")
    assert segs[0][3] == iso(T0).replace("T", " ")  # the first segment starts with the first record
    assert segs[-1][4] == iso(T0 + 599 * STEP).replace("T", " ")
    for a, nxt in zip(segs, segs[1:]):
        assert int(a[2]) == int(nxt[1])  # next offset = the following segment's base offset
    expect(page.locator("#timeline-chart canvas")).to_have_count(1)
    # retention.ms is 7 days and these records are older: every closed segment goes next
    assert "deleted next" in segs[0][6] and "active" in segs[-1][6]
    assert "Retention horizon" in page.inner_text("#retention-note")
    shot(page, "topic-partitions")


def test_config_edit_shows_in_describe_configs(page, cluster):
    b, admin = cluster
    page.goto("/topics/orders?tab=configs")
    page.click("tr[data-config='retention.ms'] button")
    page.fill("#config-value", "7200000")
    page.click("#config-form button[value=set]")
    expect(page.locator("#saved")).to_contain_text("retention.ms set to 7200000")
    row = cells(page, "tr[data-config='retention.ms']")[0]
    assert row[1] == "7200000" and row[2] == "DYNAMIC_TOPIC_CONFIG"
    res = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    entry = admin.describe_configs([res])[res].result(timeout=10)["retention.ms"]
    assert entry.value == "7200000" and entry.source == 1  # DYNAMIC_TOPIC_CONFIG
    shot(page, "topic-configs")
    # a bad value is refused with the broker's reason, and nothing changes
    page.fill("#config-name", "retention.ms")
    page.fill("#config-value", "soon")
    page.click("#config-form button[value=set]")
    expect(page.locator("#error-message")).to_contain_text("retention.ms")
    assert admin.describe_configs([res])[res].result(timeout=10)["retention.ms"].value == "7200000"
    page.fill("#config-name", "retention.ms")
    page.click("#config-form button[value=reset]")
    expect(page.locator("#saved")).to_contain_text("reset")
    assert admin.describe_configs([res])[res].result(timeout=10)["retention.ms"].source == 5  # DEFAULT_CONFIG


# ---- message browser -------------------------------------------------------------------------

@pytest.mark.parametrize("minutes", [0, 37.5, 211, 599])
def test_deep_link_from_a_time_opens_at_the_offsets_for_times_answer(page, cluster, minutes):
    b, _ = cluster
    ts = T0 + int(minutes * STEP)
    want = offsets_for_time(b.bootstrap_servers, "clicks", 0, ts)
    for frm in (iso(ts), str(ts)):
        page.goto(f"/topics/clicks?from={frm}")
        offsets = [int(o) for o in page.eval_on_selector_all("tr.record", "rs => rs.map(r => r.dataset.offset)")]
        assert offsets[0] == want and min(offsets) == want  # no earlier record is shown
        first = cells(page, "tr.record")[0]
        assert json.loads(first[4])["n"] == want  # the record itself, value pretty-printed as JSON
    if minutes == 37.5:
        shot(page, "messages-from-time")


def test_deep_link_across_partitions_and_past_the_end(page, cluster):
    b, _ = cluster
    ts = T0 + 45 * STEP
    page.goto(f"/topics/orders?from={ts}")
    firsts = {}
    for p, o in page.eval_on_selector_all("tr.record", "rs => rs.map(r => [+r.dataset.partition, +r.dataset.offset])"):
        firsts[p] = min(firsts.get(p, o), o)
    for p in range(3):
        assert firsts[p] == offsets_for_time(b.bootstrap_servers, "orders", p, ts)
    page.goto(f"/topics/orders?from={T0 + 10 ** 12}")  # later than every record (2057): an empty page
    expect(page.locator("tr.record")).to_have_count(0)


def test_browse_with_picker_offset_filter_and_formats(page, cluster):
    b, _ = cluster
    page.goto("/topics/clicks?tab=messages")
    ts = T0 + 100 * STEP + 30_000
    page.fill("#from-picker", iso(ts)[:-1])
    page.click("#browse-form button[type=submit]")
    first = page.locator("tr.record").first
    expect(first).to_have_attribute("data-offset", str(offsets_for_time(b.bootstrap_servers, "clicks", 0, ts)))
    # offset start, hex view
    page.select_option("#start-mode", "offset")
    page.fill("input[name=offset]", "42")
    page.select_option("select[name=format]", "hex")
    page.click("#browse-form button[type=submit]")
    expect(page.locator("tr.record").first).to_have_attribute("data-offset", "42")
    assert cells(page, "tr.record")[0][4] == json.dumps({"n": 42, "page": "/p/3"}).encode().hex(" ")
    # filter by key text, from the beginning: only user-3's clicks, paged
    page.select_option("#start-mode", "beginning")
    page.fill("input[name=filter]", "user-3")
    page.select_option("select[name=format]", "auto")
    page.click("#browse-form button[type=submit]")
    keys = [r[3] for r in cells(page, "tr.record")]
    assert len(keys) == 50 and set(keys) == {"user-3"}
    page.click("#more-row button")
    expect(page.locator("tr.record")).to_have_count(86)  # 600 / 7 rounded up, all found
    offs = [int(o) for o in page.eval_on_selector_all("tr.record", "rs => rs.map(r => r.dataset.offset)")]
    assert offs == [i for i in range(600) if i % 7 == 3]
    shot(page, "messages-filtered")
    # the end: the last page ends at the high watermark
    page.fill("input[name=filter]", "")
    page.select_option("#start-mode", "end")
    page.click("#browse-form button[type=submit]")
    offs = [int(o) for o in page.eval_on_selector_all("tr.record", "rs => rs.map(r => r.dataset.offset)")]
    assert offs == list(range(550, 600))
    # a start time that is not a time is refused on a page, not a crash
    page.goto("/topics/clicks?from=yesterday-ish")
    expect(page.locator("#error-message")).to_contain_text("neither an ISO date-time nor epoch milliseconds")


def test_follow_live_shows_new_records(page, cluster):
    b, _ = cluster
    page.goto("/topics/orders?tab=messages&start=end&partition=1")
    page.check("#follow")
    expect(page.locator("tr.poller")).to_have_count(1)
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    p.produce("orders", partition=1, key="live", value="fresh off the press")
    assert p.flush(10) == 0
    expect(page.locator("tr.record.live", has_text="fresh off the press")).to_have_count(1, timeout=10_000)
    shot(page, "messages-follow")


# ---- produce ---------------------------------------------------------------------------------

def test_record_produced_from_the_form_is_read_back_by_confluent_kafka(page, cluster):
    b, _ = cluster
    page.goto("/topics/orders?tab=produce")
    page.fill("#produce-form input[name=key]", "from-the-browser")
    page.fill("#produce-form textarea[name=value]", '{"total": 12.5, "items": ["ä", "b"]}')
    page.fill("#produce-form textarea[name=headers]", "trace=abc123\nsource=console")
    page.fill("#produce-form input[name=timestamp]", "2026-02-03T04:05:06.789Z")
    shot(page, "produce-form")
    page.click("#produce-form button[type=submit]")
    expect(page.locator("#produced")).to_be_visible()
    part, off = map(int, page.inner_text("#produced strong").split(":"))
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "readback", "enable.auto.commit": False})
    c.assign([TopicPartition("orders", part, off)])
    m = c.poll(10)
    c.close()
    assert m is not None and m.error() is None
    assert (m.key(), m.value()) == (b"from-the-browser", '{"total": 12.5, "items": ["ä", "b"]}'.encode())
    assert m.headers() == [("trace", b"abc123"), ("source", b"console")]
    assert m.timestamp() == (1, 1_770_091_506_789)  # CreateTime, as given
    # the default partitioner: murmur2 of the key, as the Java producer and librdkafka's murmur2
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "partitioner": "murmur2_random"})
    got = []
    p.produce("orders", key="from-the-browser", value="x", on_delivery=lambda e, msg: got.append(msg.partition()))
    p.flush(10)
    assert got == [part]
    page.click("#produced a")
    expect(page.locator("tr.record").first).to_have_attribute("data-offset", str(off))


def test_csrf_token_is_required_on_every_form(cluster):
    b, _ = cluster
    for path in ("/topics", "/topics/orders/delete", "/topics/orders/configs", "/topics/orders/produce",
                 "/groups/g/reset", "/groups/g/reset/execute"):
        req = urllib.request.Request(b.console_url + path, method="POST", data=b"name=x&confirm=orders&csrf_token=forged",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Cookie": "hourglass_console=" + "a" * 43})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 403 and b"cross-site request forgery" in e.value.read()
    admin = cluster[1]
    assert "orders" in admin.list_topics(timeout=10).topics


# ---- groups, transactions, schemas, security -------------------------------------------------

def test_group_lag_equals_what_it_committed_and_reset_to_a_time(page, cluster):
    b, _ = cluster
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "billing", "enable.auto.commit": False})
    committed = [TopicPartition("orders", 0, 7), TopicPartition("orders", 1, 11), TopicPartition("orders", 2, 3)]
    c.commit(offsets=committed, asynchronous=False)
    c.close()
    ends = {}
    probe = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "probe"})
    for p in range(3):
        ends[p] = probe.get_watermark_offsets(TopicPartition("orders", p), timeout=10)[1]
    page.goto("/groups")
    row = [r for r in cells(page, "#groups tbody tr") if r[0] == "billing"][0]
    assert row[1] == "classic" and row[2] == "Empty"
    page.click("a:text('billing')")
    lags = {int(r[1]): (int(r[2]), int(r[3]), int(r[4])) for r in cells(page, "#lags tbody tr")}
    assert lags == {tp.partition: (tp.offset, ends[tp.partition], ends[tp.partition] - tp.offset) for tp in committed}
    assert int(page.inner_text("#total-lag")) == sum(v[2] for v in lags.values())
    expect(page.locator("#lag-chart canvas")).to_have_count(1)
    shot(page, "group")

    ts = T0 + 30 * STEP
    page.fill("#reset-picker", iso(ts)[:-1])
    page.click("#reset-form button[type=submit]")
    want = {p: offsets_for_time(b.bootstrap_servers, "orders", p, ts) for p in range(3)}
    plan = {int(r[1]): (int(r[2]), int(r[3])) for r in cells(page, "#reset-plan tbody tr")}
    assert plan == {tp.partition: (tp.offset, want[tp.partition]) for tp in committed}
    shot(page, "group-reset-confirm")
    # nothing changed before the confirmation
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "billing"})
    assert [tp.offset for tp in c.committed(committed, timeout=10)] == [7, 11, 3]
    page.click("#reset-confirm button[type=submit]")
    expect(page).to_have_url(re.compile(r"/groups/billing$"))
    assert [tp.offset for tp in c.committed(committed, timeout=10)] == [want[p] for p in range(3)]
    c.close()


def test_group_ids_that_need_escaping(page, cluster):
    b, _ = cluster
    gid = "team a/b?#<c>"
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": gid, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("orders", 0, 1)], asynchronous=False)
    c.close()
    page.goto("/groups")
    page.click(f"tr[data-group='{gid}'] a")
    expect(page.locator("h1")).to_contain_text(gid)
    assert cells(page, "#lags tbody tr")[0][2] == "1"


def test_consumer_protocol_and_share_groups_with_members(page, cluster):
    from confluent_kafka import ShareConsumer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ResourceType
    b, admin = cluster
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "kip848", "group.protocol": "consumer",
                  "client.id": "new-protocol", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    res = ConfigResource(ResourceType.GROUP, "sharers", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    s = ShareConsumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "sharers", "client.id": "sharer"})
    s.subscribe(["clicks"])
    try:
        mine = shared = 0
        deadline = time.time() + 30
        while (mine < 5 or shared < 5) and time.time() < deadline:
            m = c.poll(0.2)
            mine += m is not None and m.error() is None
            shared += sum(1 for m in s.poll(0.2) if m.error() is None)
        assert mine >= 5 and shared >= 5
        c.commit(asynchronous=False)
        page.goto("/groups")
        types = {r[0]: r[1] for r in cells(page, "#groups tbody tr")}
        assert types["kip848"] == "consumer" and types["sharers"] == "share"
        page.goto("/groups/kip848")
        [member] = cells(page, "#members tbody tr")
        assert member[1] == "new-protocol" and member[3] == "orders: 0, 1, 2"
        committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition("orders", p) for p in range(3)],
                                                                 timeout=10) if tp.offset >= 0}
        shown = {int(r[1]): int(r[2]) for r in cells(page, "#lags tbody tr") if r[2] != "-"}
        assert shown == committed
        shot(page, "group-consumer-protocol")
        page.goto("/groups/sharers")
        [member] = cells(page, "#members tbody tr")
        assert member[1] == "sharer" and member[3] == "clicks: 0"
        expect(page.locator("#reset-form")).to_have_count(0)  # share groups move by acknowledgements
        shot(page, "group-share")
    finally:
        c.close()
        s.close()


def test_open_transaction_and_the_lso_it_holds_back(page, cluster):
    b, _ = cluster
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "checkout-1"})
    p.init_transactions(10)
    p.begin_transaction()
    for i in range(4):
        p.produce("orders", partition=2, key="t", value=f"txn {i}")
    p.flush(10)
    try:
        page.goto("/transactions")
        [row] = [r for r in cells(page, "#transactions tbody tr")]
        assert row[0] == "checkout-1" and row[2] == "Ongoing"
        first, lso, hwm, held = map(int, row[5:9])
        assert lso == first and hwm - lso == held == 4
        shot(page, "transactions")
        page.goto("/topics/orders")
        part2 = cells(page, "#partitions tbody tr")[2]
        assert int(part2[3]) == lso and int(part2[2]) == hwm
    finally:
        p.abort_transaction(10)
    page.goto("/transactions")
    expect(page.locator("#transactions .empty")).to_be_visible()


PAYMENT_V1 = {"type": "record", "name": "Payment", "fields": [
    {"name": "id", "type": "long"}, {"name": "amount", "type": "double"}]}
PAYMENT_V2 = {"type": "record", "name": "Payment", "fields": [
    {"name": "id", "type": "long"}, {"name": "amount", "type": "double"},
    {"name": "currency", "type": "string", "default": "EUR"}]}


def test_schemas_subjects_versions_diff_and_decoded_values(page, cluster):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    b, admin = cluster
    wait_done(admin.create_topics([NewTopic("payments", 1, 1), NewTopic("profiles", 1, 1)]))
    sr = SchemaRegistryClient({"url": b.schema_registry_url})
    v1 = sr.register_schema("payments-value", Schema(json.dumps(PAYMENT_V1), "AVRO"))
    v2 = sr.register_schema("payments-value", Schema(json.dumps(PAYMENT_V2), "AVRO"))
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    avro_value = AvroSerializer(sr, json.dumps(PAYMENT_V2), conf={"auto.register.schemas": False,
                                                                   "use.latest.version": True})
    p.produce("payments", key="p-1", value=avro_value({"id": 1, "amount": 9.5, "currency": "SEK"},
                                                      SerializationContext("payments", MessageField.VALUE)))
    json_schema = json.dumps({"type": "object", "properties": {"name": {"type": "string"}}})
    json_value = JSONSerializer(json_schema, sr)
    p.produce("profiles", value=json_value({"name": "Ada"}, SerializationContext("profiles", MessageField.VALUE)))
    assert p.flush(10) == 0

    page.goto("/schemas")
    rows = {r[0]: r for r in cells(page, "#subjects tbody tr")}
    assert rows["payments-value"][1:] == ["AVRO", "2", "2", str(v2)]
    assert rows["profiles-value"][1] == "JSON"
    shot(page, "schemas")
    page.click("a:text('payments-value')")
    assert [r[:2] for r in cells(page, "#versions tbody tr")] == [["1", str(v1)], ["2", str(v2)]]
    added = page.eval_on_selector_all("#diff .add", "xs => xs.map(x => x.innerText)")
    assert any('"currency"' in line for line in added) and not page.locator("#diff .del").count()
    assert json.loads(page.inner_text("#schema-text")) == PAYMENT_V2
    shot(page, "schema-diff")
    page.select_option("select[name=a]", "2")
    page.select_option("select[name=b]", "1")
    page.click("#diff-form button")
    removed = page.eval_on_selector_all("#diff .del", "xs => xs.map(x => x.innerText)")
    assert any('"currency"' in line for line in removed)

    # the message browser decodes values through the registry
    page.goto("/topics/payments?tab=messages")
    assert json.loads(page.inner_text("tr.record td.value pre")) == {"id": 1, "amount": 9.5, "currency": "SEK"}
    assert page.inner_text("tr.record td.value .fmt") == f"avro · schema {v2}"
    shot(page, "messages-avro")
    page.goto("/topics/profiles?tab=messages")
    assert json.loads(page.inner_text("tr.record td.value pre")) == {"name": "Ada"}
    page.goto("/topics/payments?tab=messages&format=hex")  # the raw bytes are still there
    assert cells(page, "tr.record")[0][4].startswith("00 00 00 00 ")

    # Protobuf: Confluent's wire format written by hand (magic 0, the id, message indexes, the message)
    proto = 'syntax = "proto3";\npackage shop;\nmessage Refund { int64 id = 1; string reason = 2; }\n' \
            'message Receipt { string shop = 1; }\n'
    pid = sr.register_schema("refunds-value", Schema(proto, "PROTOBUF"))
    wait_done(admin.create_topics([NewTopic("refunds", 1, 1)]))
    refund = b"\x08\x07\x12\x05late!"  # id = 7, reason = "late!"
    receipt = b"\x0a\x03abc"  # shop = "abc"
    p.produce("refunds", value=b"\x00" + pid.to_bytes(4, "big") + b"\x00" + refund)  # [0]: a lone 0
    p.produce("refunds", value=b"\x00" + pid.to_bytes(4, "big") + b"\x02\x02" + receipt)  # [1]
    assert p.flush(10) == 0
    page.goto("/topics/refunds?tab=messages")
    values = [json.loads(v) for v in page.eval_on_selector_all("tr.record td.value pre", "xs => xs.map(x => x.innerText)")]
    assert values == [{"id": "7", "reason": "late!"}, {"shop": "abc"}]  # protobuf's JSON mapping: int64 as text
    assert page.inner_text("tr.record td.value .fmt >> nth=0") == f"protobuf · schema {pid}"


def test_security_page_without_an_authorizer(page):
    page.goto("/security")
    expect(page.locator("#no-authorizer")).to_be_visible()
    shot(page, "security")


def test_unknown_topic_and_group_are_pages_not_errors(page):
    for path in ("/topics/nope", "/groups/nope"):
        resp = page.goto(path)
        assert resp.status == 404
        expect(page.locator("h1")).to_have_text("Not found")


def test_bad_input_gets_a_page_never_a_500(cluster):
    b, _ = cluster
    cases = {
        "/topics?page=two": 400, "/topics?page=-5": 200, "/topics/orders?partition=9": 400,
        "/topics/orders?tab=nope": 400, "/topics/orders?tab=messages&partition=x": 400,
        "/topics/orders?tab=messages&partition=7": 400, "/topics/orders?tab=messages&start=sideways": 400,
        "/topics/orders?tab=messages&start=offset": 400, "/topics/orders?tab=messages&start=offset&offset=-3": 200,
        "/topics/orders?tab=messages&start=offset&offset=99999999": 200, "/topics/orders?from=-1": 400,
        "/topics/orders?from=2026-13-45T99:00": 400, "/topics/orders?from=99999999999999": 200,
        "/topics/orders/records?pos=0:x": 400, "/topics/orders/tail?pos=zz": 400, "/topics/nope/tail": 404,
        "/groups/nope/lag.json": 200, "/static/../pages.py": 404,
    }
    for path, want in cases.items():
        try:
            with urllib.request.urlopen(b.console_url + path, timeout=10) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == want, path


def test_lag_history_is_charted(page, cluster):
    b, _ = cluster
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "charted", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("clicks", 0, 100)], asynchronous=False)
    c.close()
    deadline = time.time() + 25
    while True:  # the broker samples lags every 10 s
        hist = json.loads(page.request.get(b.console_url + "/groups/charted/lag.json").text())
        if hist["t"] or time.time() > deadline:
            break
        time.sleep(0.5)
    assert hist["partitions"] == {"clicks:0": [600 - 100] * len(hist["t"])} and hist["total"] == [500] * len(hist["t"])
    page.goto("/groups/charted")
    expect(page.locator("#lag-chart canvas")).to_have_count(1)
    page.wait_for_timeout(300)
    shot(page, "group-lag-chart")


def test_overview_shows_listeners_counts_and_rates_chart(page, cluster):
    b, _ = cluster
    page.goto("/")
    expect(page.locator("#n-topics")).to_have_text(re.compile(r"^\d+$"))
    assert int(page.inner_text("#n-topics")) >= 2
    listeners = " ".join(r[1] for r in cells(page, "#listeners tbody tr"))
    assert b.bootstrap_servers.split(",")[0] in listeners and b.console_url in listeners
    expect(page.locator("#rates-chart canvas")).to_have_count(1)  # uPlot drew the chart
    # traffic the sampler (every 5 s) turns into a produce rate
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    for i in range(50):
        p.produce("orders", value=b"r" * 1000, timestamp=T0)
    assert p.flush(10) == 0
    deadline = time.time() + 15
    while True:
        rates = json.loads(page.request.get("/rates.json").text())
        if rates["t"] and max(rates["bytes_in"]) > 0 or time.time() > deadline:
            break
        time.sleep(0.5)
    assert max(rates["bytes_in"]) > 0
    page.reload()
    expect(page.locator("#rates-chart canvas")).to_have_count(1)
    shot(page, "overview")


# ---- a secured broker: login, ACLs, denial --------------------------------------------------

def test_login_acls_and_a_denied_user(browser, tmp_path):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType, UserScramCredentialUpsertion, ScramCredentialInfo, ScramMechanism)
    with EmbeddedBroker(console=True, security={"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-256",
                                                 "acls": True}) as b:
        sec = b.security
        admin = AdminClient(b.client_config)
        wait_done(admin.create_topics([NewTopic("secret-plans", 1, 1), NewTopic("menu", 1, 1)]))
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion("bob", info, b"bobs-password")]).values():
            f.result(timeout=10)
        wait_done(admin.create_acls([AclBinding(ResourceType.TOPIC, "menu", ResourcePatternType.LITERAL, "User:bob", "*",
                                                AclOperation.DESCRIBE, AclPermissionType.ALLOW)]))
        p = Producer(b.client_config)
        p.produce("secret-plans", value="the plan")
        p.flush(10)

        # no credentials: refused
        anon = browser.new_context(base_url=b.console_url)
        resp = anon.request.get("/topics")
        assert resp.status == 401 and resp.headers["www-authenticate"].startswith("Basic")
        assert "secret-plans" not in resp.text()
        anon.close()

        # alice (a super user) sees everything, the ACLs and the users; never a password
        # (HTTP basic, as a script or a proxy in front would send it)
        basic = "Basic " + base64.b64encode(f"{sec.user}:{sec.password}".encode()).decode()
        ctx = browser.new_context(base_url=b.console_url, extra_http_headers={"Authorization": basic})
        pg = ctx.new_page()
        pg.goto("/topics/secret-plans?tab=messages")
        expect(pg.locator("tr.record")).to_have_count(1)
        pg.goto("/security")
        assert ["User:bob", "*", "DESCRIBE", "ALLOW", "TOPIC", "menu", "LITERAL"] in cells(pg, "#acls tbody tr")
        users = {r[0]: r[1] for r in cells(pg, "#users tbody tr")}
        assert users["bob"] == "SCRAM-SHA-256 (4096)"
        assert sec.password not in pg.content() and "bobs-password" not in pg.content()
        assert sec.user in pg.inner_text("header .who")
        shot(pg, "security-acls")
        ctx.close()

        # bob logs in with the form: a session; sees only the topic he may describe, and denial pages elsewhere
        ctx = browser.new_context(base_url=b.console_url)
        pg = ctx.new_page()
        pg.goto("/topics")
        expect(pg).to_have_url(re.compile(r"/login\?next=(%2F|/)topics$"))
        pg.fill("#login-form input[name=user]", "bob")
        pg.fill("#login-form input[name=password]", "not-bobs-password")
        pg.click("#login-form button")
        expect(pg.locator("#error-message")).to_have_text("Wrong user name or password.")
        assert "not-bobs-password" not in pg.content()
        shot(pg, "login")
        pg.fill("#login-form input[name=password]", "bobs-password")
        pg.click("#login-form button")
        expect(pg).to_have_url(re.compile(r"/topics$"))
        assert pg.inner_text("header .who") == "User:bob"
        assert [r[0] for r in cells(pg, "#topics tbody tr")] == ["menu"]
        resp = pg.goto("/topics/secret-plans?tab=messages")
        assert resp.status == 403
        expect(pg.locator("#denied")).to_contain_text("User:bob")
        assert "the plan" not in pg.content()
        shot(pg, "denied")
        assert pg.goto("/topics/menu?tab=messages").status == 403  # DESCRIBE, but not READ
        assert pg.goto("/topics/menu?tab=produce").status == 403
        assert pg.goto("/security").status == 403
        pg.goto("/schemas")
        expect(pg.locator("#no-registry")).to_contain_text("schema.registry.listeners")
        assert pg.goto("/topics/no-such-topic").status == 403  # no topic-name oracle
        # a form post as bob is refused by the ACLs too, with a valid CSRF token
        pg.goto("/topics")
        pg.click("text=Create topic")
        pg.fill("#create-topic input[name=name]", "bobs-topic")
        pg.click("#create-topic button[type=submit]")
        expect(pg.locator("#denied")).to_be_visible()
        assert "bobs-topic" not in admin.list_topics(timeout=10).topics
        # log out: the session is gone, the pages ask for a login again
        pg.click("#logout")
        expect(pg).to_have_url(re.compile(r"/login$"))
        pg.goto("/topics")
        expect(pg).to_have_url(re.compile(r"/login\?next="))
        ctx.close()
