"""Page routes. Each handler reads through ``console.ui.reads`` (the broker's own interfaces),
checks the principal with the broker's authorizer, and renders a template.

Forms: every POST carries ``csrf_token``, an HMAC (a per-process secret) of the browser's
session cookie; a POST without the matching token is refused before anything happens. The
cookie is ``SameSite=Strict`` and ``HttpOnly``. Passwords and sensitive config values are never
rendered.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import secrets
from datetime import datetime, timezone
from importlib import resources
from urllib.parse import urlencode

from aiohttp import web

from broker.security.acl import AclOperation as Op, ResourceType as RT, CLUSTER_NAME
from console.ui import reads
from console.ui.history import History

log = logging.getLogger(__name__)

SESSION_COOKIE = "hourglass_console"
# per-request values (aiohttp recommends typed keys)
SID = web.RequestKey("console_sid", str)
CSRF = web.RequestKey("console_csrf", str)
FORM = web.RequestKey("console_form", object)
TOPICS_PER_PAGE = 50


class Denied(Exception):
    def __init__(self, principal, op: Op, rt: RT, name: str):
        super().__init__(f"{principal} may not {op.name} {rt.name.lower()} {name}")
        self.principal, self.op, self.rt, self.name = principal, op, rt, name


class NotFound(Exception):
    pass


class BadInput(Exception):
    pass


def fmt_ts(ms) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def fmt_bytes(n) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def fmt_duration(ms) -> str:
    if ms is None or ms < 0:
        return "-"
    s = ms / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.1f} s"


class Pages:
    def __init__(self, broker, users):
        import jinja2
        self.broker = broker
        self.users = users
        self.secret = secrets.token_bytes(32)
        self.history = History(broker)
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("console.ui", "templates"),
            autoescape=jinja2.select_autoescape(("html",)), trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(ts=fmt_ts, bytes=fmt_bytes, duration=fmt_duration)
        self.env.globals.update(urlencode=urlencode)

    # ---- plumbing ---------------------------------------------------------------------------------
    def register(self, app: web.Application) -> None:
        r = app.router
        static = resources.files("console.ui") / "static"
        r.add_static("/static/", str(static), name="console-static", append_version=False)
        for path, fn in (("/", self.overview), ("/topics", self.topics), ("/topics/{topic}", self.topic),
                         ("/topics/{topic}/records", self.records), ("/topics/{topic}/tail", self.tail),
                         ("/topics/{topic}/timeline.json", self.timeline_json),
                         ("/groups", self.groups), ("/groups/{group}", self.group),
                         ("/groups/{group}/lag.json", self.lag_json), ("/rates.json", self.rates_json),
                         ("/transactions", self.transactions), ("/schemas", self.schemas),
                         ("/security", self.security)):
            r.add_get(path, self._wrap(fn))
        for path, fn in (("/topics", self.create_topic), ("/topics/{topic}/delete", self.delete_topic),
                         ("/topics/{topic}/configs", self.alter_configs),
                         ("/topics/{topic}/produce", self.produce),
                         ("/groups/{group}/reset", self.reset_plan),
                         ("/groups/{group}/reset/execute", self.reset_execute)):
            r.add_post(path, self._wrap(fn, post=True))
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)

    async def _start(self, app) -> None:
        self.history.start()

    async def _stop(self, app) -> None:
        await self.history.stop()

    def _session(self, request) -> tuple[str, bool]:
        sid = request.cookies.get(SESSION_COOKIE, "")
        if len(sid) >= 32:
            return sid, False
        return secrets.token_urlsafe(32), True

    def csrf_token(self, sid: str, principal) -> str:
        return hmac.new(self.secret, f"{sid}\0{principal}".encode(), hashlib.sha256).hexdigest()

    def _wrap(self, fn, post: bool = False):
        async def handler(request: web.Request):
            sid, new = self._session(request)
            request[SID] = sid
            request[CSRF] = self.csrf_token(sid, request.get("principal"))
            try:
                if post:
                    form = await request.post()
                    token = form.get("csrf_token", "")
                    if new or not hmac.compare_digest(str(token), request[CSRF]):
                        resp = self.render(request, "error.html", status=403, title="Forbidden",
                                           message="This form has expired or did not come from this console "
                                                   "(cross-site request forgery protection). Reload the page and try again.")
                    else:
                        request[FORM] = form
                        resp = await fn(request)
                else:
                    resp = await fn(request)
            except Denied as d:
                resp = self.render(request, "denied.html", status=403, denied=d)
            except NotFound as e:
                resp = self.render(request, "error.html", status=404, title="Not found", message=str(e))
            except BadInput as e:
                resp = self.render(request, "error.html", status=400, title="Bad input", message=str(e))
            if new:
                resp.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path="/")
            return resp
        return handler

    def render(self, request, template: str, status: int = 200, **ctx) -> web.Response:
        ctx.setdefault("principal", request.get("principal"))
        ctx["csrf_token"] = request.get(CSRF, "")
        ctx["path"] = request.path
        ctx["cluster_id"] = self.broker.cluster_id
        html = self.env.get_template(template).render(**ctx)
        return web.Response(text=html, status=status, content_type="text/html",
                            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    def need(self, request, op: Op, rt: RT, name: str = CLUSTER_NAME) -> None:
        if not reads.allowed(self.broker, request.get("principal"), op, rt, name, self._host(request)):
            raise Denied(request.get("principal"), op, rt, name)

    @staticmethod
    def _host(request) -> str:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        return peer[0] if peer else "127.0.0.1"

    def _topic(self, request, op: Op = Op.DESCRIBE) -> str:
        name = request.match_info["topic"]
        self.need(request, op, RT.TOPIC, name)  # before existence, as Kafka (no topic-name oracle)
        if self.broker.topics.get(name) is None:
            raise NotFound(f"Topic {name} does not exist.")
        return name

    @staticmethod
    def _int(value, what: str, default=None):
        if value is None or str(value).strip() == "":
            return default
        try:
            return int(str(value).strip())
        except ValueError:
            raise BadInput(f"{what} must be a whole number, not {value!r}.") from None

    # ---- overview ---------------------------------------------------------------------------------
    async def overview(self, request):
        b = self.broker
        names = reads.visible_topics(b, request.get("principal"))
        parts = size = 0
        for n in names:
            t = b.topics.get(n)
            parts += t.partitions
            for p in range(t.partitions):
                plog = b.topics.log(n, p)
                if plog is not None:
                    size += plog.size_in_bytes
        listeners = [(lst.name, f"{lst.host or '0.0.0.0'}:{port}") for lst, (_h, port) in
                     zip(b.cfg.listeners, b.bound)] if getattr(b, "bound", None) else []
        http = [(name, url) for name, urls in (b.http.urls.items() if getattr(b, "http", None) else [])
                for url in urls]
        return self.render(request, "overview.html", title="Overview", topics=len(names), partitions=parts,
                           size=size, listeners=listeners, http=http, node_id=b.node_id,
                           groups=len(reads.list_groups(b, request.get("principal"))))

    async def rates_json(self, request):
        return web.json_response(self.history.rate_series())

    # ---- topics -----------------------------------------------------------------------------------
    async def topics(self, request, error: str | None = None, status: int = 200):
        q = request.query.get("q", "")
        page = max(self._int(request.query.get("page"), "page", 1), 1)
        names = reads.visible_topics(self.broker, request.get("principal"), q)
        pages = max(math.ceil(len(names) / TOPICS_PER_PAGE), 1)
        page = min(page, pages)
        rows = [reads.topic_row(self.broker, n) for n in names[(page - 1) * TOPICS_PER_PAGE:page * TOPICS_PER_PAGE]]
        tmpl = "topics_table.html" if request.headers.get("HX-Request") and request.method == "GET" else "topics.html"
        return self.render(request, tmpl, status=status, title="Topics", rows=rows, q=q, page=page, pages=pages,
                           total=len(names), error=error)

    async def create_topic(self, request):
        from broker.topics import TopicError
        f = request[FORM]
        name = f.get("name", "").strip()
        if not reads.allowed(self.broker, request.get("principal"), Op.CREATE, RT.CLUSTER):
            self.need(request, Op.CREATE, RT.TOPIC, name)  # CREATE on the cluster or on the topic
        partitions = self._int(f.get("partitions"), "Partitions", -1)
        configs = {}
        for line in f.get("configs", "").splitlines():
            if line.strip():
                k, sep, v = line.partition("=")
                if not sep:
                    raise BadInput(f"Config line {line!r} is not key=value.")
                configs[k.strip()] = v.strip()
        try:
            self.broker.topics.create_topic(name, partitions, -1, configs)
        except TopicError as e:
            return await self.topics(request, error=e.message, status=400)
        raise web.HTTPSeeOther(f"/topics/{name}")

    async def delete_topic(self, request):
        from broker.topics import TopicError
        name = self._topic(request, Op.DELETE)
        if request[FORM].get("confirm", "") != name:
            raise BadInput("Type the topic's name to confirm its deletion.")
        try:
            self.broker.topics.delete_topic(name)
        except TopicError as e:
            raise BadInput(e.message) from None
        raise web.HTTPSeeOther("/topics")

    async def topic(self, request):
        name = self._topic(request)
        q = request.query
        tab = q.get("tab") or ("messages" if q.get("from") or q.get("start") else "partitions")
        ctx = {"topic": name, "tab": tab, "title": name, "info": self.broker.topics.get(name)}
        if tab == "partitions":
            ctx["partitions"] = reads.partitions(self.broker, name)
            p = self._int(q.get("partition"), "partition", 0)
            if not 0 <= p < ctx["info"].partitions:
                raise BadInput(f"Partition {p} does not exist.")
            ctx["timeline_partition"] = p
            ctx["timeline"] = reads.segment_timeline(self.broker, name, p)
            ctx["timeline_json"] = json.dumps(ctx["timeline"])
        elif tab == "configs":
            self.need(request, Op.DESCRIBE_CONFIGS, RT.TOPIC, name)
            ctx["configs"] = reads.topic_configs(self.broker, name)
            ctx["message"] = q.get("saved")
        elif tab == "messages":
            self.need(request, Op.READ, RT.TOPIC, name)
            ctx.update(self._records_ctx(request, name))
        elif tab == "produce":
            self.need(request, Op.WRITE, RT.TOPIC, name)
            ctx["produced"] = q.get("produced")
        else:
            raise BadInput(f"Unknown tab {tab!r}.")
        return self.render(request, "topic.html", **ctx)

    def _records_ctx(self, request, name: str) -> dict:
        q = request.query
        t = self.broker.topics.get(name)
        part = q.get("partition", "all")
        parts = list(range(t.partitions)) if part in ("", "all") else [self._int(part, "partition")]
        if any(not 0 <= p < t.partitions for p in parts):
            raise BadInput(f"Partition {part} does not exist.")
        start = q.get("start") or ("time" if q.get("from") else "beginning")
        try:
            ts = reads.parse_time(q.get("from"))
        except ValueError:
            raise BadInput(f"{q.get('from')!r} is neither an ISO date-time nor epoch milliseconds.") from None
        if start == "time" and ts is None:
            raise BadInput("Pick a date and time to start from.")
        if ts is not None and ts < 0:
            raise BadInput("The start time must not be negative.")
        offset = self._int(q.get("offset"), "offset")
        if start == "offset" and offset is None:
            raise BadInput("Give an offset to start from.")
        needle = q.get("filter", "")
        fmt = q.get("format", "auto")
        if "pos" in q:
            positions = reads.decode_positions(q["pos"])
        else:
            positions = reads.start_offsets(self.broker, name, parts, mode=start, ts=ts, offset=offset)
        page = reads.read_page(self.broker, name, positions, needle=needle)
        params = {"partition": part, "start": start, "from": q.get("from", ""), "offset": q.get("offset", ""),
                  "filter": needle, "format": fmt}
        return {"page": page, "rows": self._rows(page.records, fmt), "params": params, "starts": positions,
                "start_ts": ts, "partition_choice": part, "partitions_n": t.partitions,
                "next_pos": reads.encode_positions(page.next_positions),
                "picker_value": fmt_ts(ts)[:-1] if ts is not None else ""}

    @staticmethod
    def _rows(records, fmt: str) -> list[dict]:
        out = []
        for r in records:
            key, kf = reads.render_bytes(r.key, "auto" if fmt == "json" else fmt)
            val, vf = reads.render_bytes(r.value, fmt)
            out.append({"partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
                        "timestamp_type": r.timestamp_type, "key": key, "key_format": kf, "value": val,
                        "value_format": vf, "headers": [(k, reads.render_bytes(v, "auto")[0]) for k, v in r.headers]})
        return out

    async def records(self, request):
        """The next page of the message browser (htmx: rows replacing the "more" row)."""
        name = self._topic(request, Op.READ)
        ctx = self._records_ctx(request, name)
        return self.render(request, "records_rows.html", topic=name, **ctx)

    async def tail(self, request):
        """Follow live: rows after ``pos`` and a new poller row carrying the positions after them."""
        name = self._topic(request, Op.READ)
        positions = reads.decode_positions(request.query.get("pos", ""))
        needle = request.query.get("filter", "")
        fmt = request.query.get("format", "auto")
        page = reads.read_page(self.broker, name, positions, needle=needle, page_size=200)
        return self.render(request, "tail_rows.html", topic=name, rows=self._rows(page.records, fmt),
                           next_pos=reads.encode_positions(page.next_positions), filter=needle, format=fmt)

    async def timeline_json(self, request):
        name = self._topic(request)
        p = self._int(request.query.get("partition"), "partition", 0)
        if not 0 <= p < self.broker.topics.get(name).partitions:
            raise BadInput(f"Partition {p} does not exist.")
        return web.json_response(reads.segment_timeline(self.broker, name, p))

    async def alter_configs(self, request):
        from broker.handlers.describe_configs import ResourceError
        name = self._topic(request, Op.ALTER_CONFIGS)
        f = request[FORM]
        key = f.get("name", "").strip()
        if not key:
            raise BadInput("Name the config to change.")
        value = None if f.get("action") == "reset" else f.get("value", "")
        try:
            reads.alter_topic_configs(self.broker, name, {key: value})
        except ResourceError as e:
            ctx = {"topic": name, "tab": "configs", "title": name, "info": self.broker.topics.get(name),
                   "configs": reads.topic_configs(self.broker, name), "error": e.message}
            return self.render(request, "topic.html", status=400, **ctx)
        done = f"{key} reset to its default" if value is None else f"{key} set to {value}"
        raise web.HTTPSeeOther(f"/topics/{name}?" + urlencode({"tab": "configs", "saved": done}))

    async def produce(self, request):
        from storage.errors import StorageError
        name = self._topic(request, Op.WRITE)
        f = request[FORM]
        t = self.broker.topics.get(name)
        part = self._int(f.get("partition"), "Partition")
        if part is not None and not 0 <= part < t.partitions:
            raise BadInput(f"Partition {part} does not exist.")
        key = f.get("key", "")
        key_b = key.encode() if key != "" or f.get("key_empty") else None
        value = f.get("value", "")
        value_b = None if f.get("value_null") else value.encode()
        headers = []
        for line in f.get("headers", "").splitlines():
            if line.strip():
                k, sep, v = line.partition("=")
                if not sep:
                    raise BadInput(f"Header line {line!r} is not name=value.")
                headers.append((k.strip(), v.encode()))
        ts_text = f.get("timestamp", "").strip()
        try:
            ts = reads.parse_time(ts_text) if ts_text else None
        except ValueError:
            raise BadInput(f"{ts_text!r} is neither an ISO date-time nor epoch milliseconds.") from None
        try:
            p, off = reads.produce(self.broker, name, part, key_b, value_b, headers, ts)
        except StorageError as e:
            raise BadInput(f"The broker refused the record: {e}") from None
        raise web.HTTPSeeOther(f"/topics/{name}?" + urlencode({"tab": "produce", "produced": f"{p}:{off}"}))

    # ---- groups -----------------------------------------------------------------------------------
    async def groups(self, request):
        rows = reads.list_groups(self.broker, request.get("principal"))
        return self.render(request, "groups.html", title="Consumer groups", rows=rows)

    def _group(self, request, op: Op = Op.DESCRIBE) -> dict:
        gid = request.match_info["group"]
        self.need(request, op, RT.GROUP, gid)
        g = reads.describe_group(self.broker, gid)
        if g is None:
            raise NotFound(f"Group {gid} does not exist.")
        # the offsets of topics the principal may not describe stay hidden
        g["lags"] = [r for r in g["lags"] if reads.allowed(self.broker, request.get("principal"), Op.DESCRIBE,
                                                            RT.TOPIC, r["topic"])]
        return g

    async def group(self, request):
        g = self._group(request)
        return self.render(request, "group.html", title=g["group_id"], g=g,
                           total_lag=sum(r["lag"] for r in g["lags"]))

    async def lag_json(self, request):
        g = self._group(request)
        return web.json_response(self.history.lag_series(g["group_id"]))

    def _reset_plan(self, request, g) -> tuple[int, list[dict]]:
        f = request[FORM]
        try:
            ts = reads.parse_time(f.get("to", ""))
        except ValueError:
            raise BadInput(f"{f.get('to')!r} is neither an ISO date-time nor epoch milliseconds.") from None
        if ts is None or ts < 0:
            raise BadInput("Pick the date and time to reset to.")
        if g["type"] == "share":
            raise BadInput("Share groups have start offsets, not committed offsets: reset them with "
                           "kafka-share-groups --reset-offsets.")
        for r in g["lags"]:
            self.need(request, Op.READ, RT.TOPIC, r["topic"])
        return ts, reads.plan_reset_to_time(self.broker, g["group_id"], ts)

    async def reset_plan(self, request):
        g = self._group(request, Op.READ)
        ts, plan = self._reset_plan(request, g)
        return self.render(request, "reset.html", title=f"Reset {g['group_id']}", g=g, ts=ts, plan=plan,
                           to=request[FORM].get("to"), plan_json=self._plan_json(plan))

    @staticmethod
    def _plan_json(plan) -> str:
        return json.dumps([[r["topic"], r["partition"], r["new"]] for r in plan])

    async def reset_execute(self, request):
        g = self._group(request, Op.READ)
        ts, plan = self._reset_plan(request, g)
        # the plan the user confirmed: refuse if the offsets it would set moved since
        shown = request[FORM].get("plan", "")
        if shown != self._plan_json(plan):
            raise BadInput("The offsets changed since the confirmation was shown; review them again.")
        result = reads.execute_reset(self.broker, g["group_id"], plan)
        errors = {f"{t}-{p}": code for (t, p), code in result.items() if code}
        if errors:
            from protocol.errors import ErrorCode
            names = {k: ErrorCode(v).name for k, v in errors.items()}
            raise BadInput(f"The group refused the reset (Kafka resets only inactive groups): {names}")
        raise web.HTTPSeeOther(f"/groups/{g['group_id']}")

    # ---- transactions, schemas, security ----------------------------------------------------------
    async def transactions(self, request):
        rows = [t for t in reads.open_transactions(self.broker)
                if reads.allowed(self.broker, request.get("principal"), Op.DESCRIBE, RT.TRANSACTIONAL_ID,
                                 t["transactional_id"])]
        return self.render(request, "transactions.html", title="Transactions", rows=rows,
                           now=self.broker.clock.now_ms())

    async def schemas(self, request):
        registry = getattr(self.broker, "schema_registry", None)
        return self.render(request, "schemas.html", title="Schemas", registry=registry,
                           registry_urls=(self.broker.http.urls.get("schema-registry", [])
                                          if getattr(self.broker, "http", None) else []))

    async def security(self, request):
        self.need(request, Op.DESCRIBE, RT.CLUSTER)
        return self.render(request, "security.html", title="Security", acls=reads.acls(self.broker),
                           users=reads.scram_users(self.broker), auth_required=self.users.required)
