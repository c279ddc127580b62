"""A Streams-protocol (KIP-1071) group in the console: Hourglass's REST v3 resource
(``/v3/clusters/{c}/hourglass/streams-groups[/{g}]``, over HTTP) and the group's page (in
Debian's chromium through Playwright), against a running broker whose group is made of raw
StreamsGroupHeartbeats (tests/helpers/streams_group.py). What they show is checked against
what the members were told in their heartbeat answers, what they committed and the log ends.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from hourglass.embedded import EmbeddedBroker
from tests.helpers.streams_group import OVERRIDES, StreamsGroup

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
from playwright.sync_api import sync_playwright  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "console"
GROUP, SOURCE = "wordcount-app", "st-input"
PRODUCED = {0: 10, 1: 12}
COMMITTED = {0: 4, 1: 12}


@pytest.fixture(scope="module")
def app():
    with EmbeddedBroker(OVERRIDES, console=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        admin.create_topics([NewTopic(SOURCE, 2, 1)])[SOURCE].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for part, n in PRODUCED.items():
            for i in range(n):
                p.produce(SOURCE, b"v%d" % i, partition=part)
        assert p.flush(30) == 0
        g = StreamsGroup(b.bootstrap_servers, GROUP, SOURCE, partitions=2)
        try:
            for part, off in COMMITTED.items():
                g.commit(SOURCE, part, off)
            yield b, g
        finally:
            g.close()


def _get(b, path: str):
    url = f"{b.console_url}/v3/clusters/{b.broker.cluster_id}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _tasks(rows) -> dict:
    return {t["subtopology_id"]: t["partitions"] for t in rows}


def test_rest_v3_streams_group_resource(app):
    b, g = app
    status, body = _get(b, f"/hourglass/streams-groups/{GROUP}")
    assert status == 200, body
    heard = {m["member_id"]: m for m in g.snapshot()}
    assert body["kind"] == "HourglassStreamsGroup" and body["group_id"] == GROUP
    assert body["state"] == "Stable"
    # the epoch the members were told is the group's, and the topology's first
    assert {m["epoch"] for m in heard.values()} == {body["group_epoch"]} == {body["assignment_epoch"]}
    assert body["topology_epoch"] == 0
    shown = {m["member_id"]: m for m in body["members"]}
    assert set(shown) == set(heard)
    for mid, m in shown.items():
        h = heard[mid]
        assert (m["process_id"], m["user_endpoint"], m["member_epoch"]) == (h["process_id"], h["user_endpoint"],
                                                                           h["epoch"])
        assert _tasks(m["active_tasks"]) == h["active"] and _tasks(m["standby_tasks"]) == h["standby"]
        assert m["client_id"] == f"{GROUP}-client" and m["warmup_tasks"] == []
    # two members, four active tasks; standbys (num.standby.replicas 1) on the other process
    assert sorted(p for m in shown.values() for ps in _tasks(m["active_tasks"]).values() for p in ps) == [0, 0, 1, 1]
    assert any(m["standby_tasks"] for m in shown.values())
    for m in shown.values():
        for s, ps in _tasks(m["standby_tasks"]).items():
            assert not set(ps) & set(_tasks(m["active_tasks"]).get(s, []))
    assert body["subtopologies"] == [
        {"subtopology_id": "0", "source_topics": [SOURCE], "repartition_sink_topics": [f"{GROUP}-repartition"],
         "repartition_source_topics": [], "state_changelog_topics": [{"name": f"{GROUP}-store-changelog",
                                                                      "partitions": 2}]},
        {"subtopology_id": "1", "source_topics": [], "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": f"{GROUP}-repartition", "partitions": 2}],
         "state_changelog_topics": []}]
    # committed offsets with lag against the log end; each input partition names its task's owner
    owner = {(t, p): mid for mid, h in heard.items() for s, ps in h["active"].items() for p in ps
             for t in ([SOURCE] if s == "0" else [f"{GROUP}-repartition"])}
    lags = {(r["topic_name"], r["partition_id"]): r for r in body["lags"]}
    for p in (0, 1):
        r = lags[(SOURCE, p)]
        assert (r["current_offset"], r["log_end_offset"], r["lag"]) == (COMMITTED[p], PRODUCED[p],
                                                                        PRODUCED[p] - COMMITTED[p])
        assert r["member_id"] == owner[(SOURCE, p)]
        assert r["process_id"] == heard[owner[(SOURCE, p)]]["process_id"]
        assert lags[(f"{GROUP}-repartition", p)]["member_id"] == owner[(f"{GROUP}-repartition", p)]
    assert body["total_lag"] == sum(PRODUCED[p] - COMMITTED[p] for p in (0, 1))
    # the list holds it; the consumer-group resources do not (it is no consumer group)
    status, listed = _get(b, "/hourglass/streams-groups")
    assert status == 200 and [x["group_id"] for x in listed["data"]] == [GROUP]
    status, groups = _get(b, "/consumer-groups")
    assert status == 200 and GROUP not in [x["consumer_group_id"] for x in groups["data"]]
    status, err = _get(b, f"/consumer-groups/{GROUP}")
    assert status == 404 and set(err) == {"error_code", "message"}
    status, err = _get(b, "/hourglass/streams-groups/no-such-app")
    assert (status, err["error_code"]) == (404, 404) and "no-such-app" in err["message"]


def test_streams_group_page_in_chromium(app):
    b, g = app
    heard = {m["member_id"]: m for m in g.snapshot()}
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        br = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            pg = br.new_page(viewport={"width": 1400, "height": 900}, base_url=b.console_url)
            pg.set_default_timeout(10_000)
            pg.goto("/groups")
            types = {r[0]: r[1] for r in _cells(pg, "#groups tbody tr")}
            assert types[GROUP] == "streams"
            pg.click(f"#groups a:text-is('{GROUP}')")
            pg.wait_for_url(f"**/groups/{GROUP}")
            assert pg.locator("#group-state").inner_text() == "Stable"
            assert pg.locator("#group-epoch").inner_text() == str(next(iter(heard.values()))["epoch"])
            rows = {r[0]: r for r in _cells(pg, "#streams-members tbody tr")}
            assert set(rows) == set(heard)
            for mid, r in rows.items():
                h = heard[mid]
                assert (r[1], r[2]) == (h["process_id"], h["user_endpoint"])
                assert r[5] == _task_text(h["active"]) and r[6] == _task_text(h["standby"])
            subs = {r[0]: r for r in _cells(pg, "#subtopologies tbody tr")}
            assert subs["0"][1:] == [SOURCE, f"→ {GROUP}-repartition", f"{GROUP}-store-changelog (2)"]
            assert subs["1"][1:] == ["", f"{GROUP}-repartition (2) ←", ""]
            lags = {(r[0], int(r[1])): r for r in _cells(pg, "#lags tbody tr")}
            for p in (0, 1):
                owner = next(h for h in heard.values() if p in h["active"].get("0", []))
                assert lags[(SOURCE, p)][2:] == [str(COMMITTED[p]), str(PRODUCED[p]), str(PRODUCED[p] - COMMITTED[p]),
                                                 owner["process_id"]]
            assert pg.locator("#total-lag").inner_text() == str(sum(PRODUCED[p] - COMMITTED[p] for p in (0, 1)))
            assert pg.locator("#reset-form").count() == 0
            pg.screenshot(path=str(SHOTS / "group-streams.png"), full_page=True)
        finally:
            br.close()


def _cells(pg, selector: str) -> list[list[str]]:
    return [[c.strip() for c in row.locator("td").all_inner_texts()] for row in pg.locator(selector).all()]


def _task_text(tasks: dict) -> str:
    """As the page lists tasks: a line per subtopology, ``id: partitions``."""
    return "\n".join(f"{s}: {', '.join(map(str, ps))}" for s, ps in sorted(tasks.items()))
