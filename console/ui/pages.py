"""Page routes. Each handler calls ``console.model`` (the broker's own Kafka API handlers, run
as the logged-in principal, so ACLs, validation and error codes are the Kafka listener's) and
renders a template. A refusal becomes a page: denied (403), not found (404), bad input (400).

Login: HTTP basic against the broker's PLAIN/SCRAM users (``web.auth.BrokerUsers``), required
as soon as the broker has SASL users; the browser keeps the credentials for the session.

Forms: every POST carries ``csrf_token``, an HMAC (a per-process secret) of the browser's
session cookie and principal; a POST without the matching token is refused before anything
happens. The cookie is ``SameSite=Strict`` and ``HttpOnly``. Passwords and sensitive config
values are never rendered.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import secrets
import time
from datetime import datetime, timedelta, timezone
from importlib import resources
from urllib.parse import quote, urlencode

from aiohttp import web

from broker.security.acl import AclOperation as Op, ResourceType as RT, CLUSTER_NAME
from console import model
from console.ui import reads, registry
from protocol.errors import ErrorCode
from web.auth import BasicAuthError

log = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SESSION_COOKIE = "hourglass_console"
TOPICS_PER_PAGE = 50
PAGE_SIZE = 50
TAIL_PAGE = 200
OPEN_TXN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")

# per-request values (aiohttp recommends typed keys)
PRINCIPAL = web.RequestKey("console_principal", str)
SID = web.RequestKey("console_sid", str)
CSRF = web.RequestKey("console_csrf", str)
FORM = web.RequestKey("console_form", object)


class Denied(Exception):
    """The broker's authorizer said no: ``what`` names the operation and resource when the
    page checked it itself, else Kafka's message for the API's error."""

    def __init__(self, principal, what: str | None = None, message: str | None = None):
        super().__init__(f"{principal} may not {what}" if what else message)
        self.principal, self.what, self.message = principal, what, message


class NotFound(Exception):
    pass


class BadInput(Exception):
    pass


def fmt_ts(ms) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        dt = EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return str(ms)
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


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


def _raw(view: dict | None) -> bytes | None:
    """The bytes of a model record key/value view ({size, base64, text})."""
    return None if view is None else base64.b64decode(view["base64"])


def _local(target: str | None) -> str:
    """A redirect target on this console only (``/path?query``), else ``/``."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


class Sessions:
    """Login sessions: cookie value -> principal, ended after ``IDLE_S`` without a request or
    ``MAX_S`` in all (in memory: a broker restart logs everyone out)."""

    IDLE_S = 1800.0
    MAX_S = 8 * 3600.0

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._by_id: dict[str, list] = {}  # sid -> [principal, started, last seen]

    def start(self, principal: str) -> str:
        sid = secrets.token_urlsafe(32)
        now = self.clock()
        self._by_id[sid] = [principal, now, now]
        if len(self._by_id) > 10_000:  # forget the expired ones now and then
            for k in [k for k, v in self._by_id.items() if not self._live(v, now)]:
                del self._by_id[k]
        return sid

    def _live(self, entry, now: float) -> bool:
        return now - entry[2] <= self.IDLE_S and now - entry[1] <= self.MAX_S

    def principal(self, sid: str) -> str | None:
        entry = self._by_id.get(sid)
        if entry is None:
            return None
        now = self.clock()
        if not self._live(entry, now):
            del self._by_id[sid]
            return None
        entry[2] = now
        return entry[0]

    def is_session(self, sid: str) -> bool:
        return sid in self._by_id

    def end(self, sid: str) -> None:
        self._by_id.pop(sid, None)


def _is_denial(code: int | None) -> bool:
    try:
        return code is not None and ErrorCode(code).name.endswith("AUTHORIZATION_FAILED")
    except ValueError:
        return False


class Pages:
    def __init__(self, broker, users):
        import jinja2
        self.broker = broker
        self.users = users
        self.state = None  # console.app.ConsoleState: the sampled rate and lag histories
        self.sessions = Sessions()
        self.secret = secrets.token_bytes(32)
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("console.ui", "templates"),
            autoescape=jinja2.select_autoescape(("html",)), trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(ts=fmt_ts, bytes=fmt_bytes, duration=fmt_duration,
                                pathseg=lambda v: quote(str(v), safe=""))  # one path segment, "/" too
        self.env.globals.update(urlencode=urlencode)

    # ---- plumbing ---------------------------------------------------------------------------------
    def register(self, app: web.Application) -> None:
        from console.app import CONSOLE
        self.state = app.get(CONSOLE)
        app.middlewares.append(self._login)
        r = app.router
        static = resources.files("console.ui") / "static"
        r.add_static("/static/", str(static), name="console-static", append_version=False)
        r.add_get("/login", self._wrap(self.login_form))
        r.add_post("/login", self._wrap(self.login, post=True))
        r.add_post("/logout", self._wrap(self.logout, post=True))
        for path, fn in (("/", self.overview), ("/topics", self.topics), ("/topics/{topic}", self.topic),
                         ("/topics/{topic}/records", self.records), ("/topics/{topic}/tail", self.tail),
                         ("/groups", self.groups), ("/groups/{group}", self.group),
                         ("/groups/{group}/lag.json", self.lag_json), ("/rates.json", self.rates_json),
                         ("/transactions", self.transactions), ("/clients", self.clients),
                         ("/schemas", self.schemas),
                         ("/schemas/{subject}", self.schema_subject),
                         ("/security", self.security)):
            r.add_get(path, self._wrap(fn))
        for path, fn in (("/topics", self.create_topic), ("/topics/{topic}/delete", self.delete_topic),
                         ("/topics/{topic}/configs", self.alter_configs),
                         ("/topics/{topic}/produce", self.produce),
                         ("/groups/{group}/reset", self.reset_plan),
                         ("/groups/{group}/reset/execute", self.reset_execute)):
            r.add_post(path, self._wrap(fn, post=True))

    @web.middleware
    async def _login(self, request: web.Request, handler):
        """Who is asking: a login session (the form at ``/login``) or HTTP basic, against the
        broker's users; ``User:ANONYMOUS`` when the broker has none. ``/v3`` authenticates
        itself; the login page and the static assets need no login."""
        path = request.path
        if path == "/v3" or path.startswith("/v3/"):
            return await handler(request)
        if not self.users.required:
            request[PRINCIPAL] = self.users.authenticate(None)
            return await handler(request)
        header = request.headers.get("Authorization")
        if header:
            try:
                request[PRINCIPAL] = self.users.authenticate(header)
            except BasicAuthError as e:
                return self._unauthorized(request, str(e))
            return await handler(request)
        principal = self.sessions.principal(request.cookies.get(SESSION_COOKIE, ""))
        if principal is not None:
            request[PRINCIPAL] = principal
            return await handler(request)
        if path == "/login" or path.startswith("/static/"):
            return await handler(request)
        if request.method == "GET" and "text/html" in request.headers.get("Accept", ""):
            raise web.HTTPSeeOther("/login?" + urlencode({"next": request.path_qs}))
        return self._unauthorized(request, "Unauthorized: log in first.")

    def _unauthorized(self, request, message: str) -> web.Response:
        page = self.env.get_template("error.html").render(
            title="Login required", message=f"{message} Log in with a user of this broker.", path=request.path,
            principal=None, csrf_token="", cluster_id=self.broker.cluster_id)
        return web.Response(status=401, text=page, content_type="text/html",
                            headers={"WWW-Authenticate": 'Basic realm="Hourglass console", charset="UTF-8"'})

    async def login_form(self, request):
        if not self.users.required:
            raise web.HTTPSeeOther("/")
        return self.render(request, "login.html", title="Log in", next=_local(request.query.get("next")))

    async def login(self, request):
        """Check the user's password as the broker does (PLAIN or SCRAM credentials) and start a
        session under a new cookie value (no session fixation); never echo the password."""
        f = request[FORM]
        user, password, nxt = f.get("user", ""), f.get("password", ""), _local(f.get("next"))
        principal = self.users.principal(user, password) if user and self.users.required else None
        if principal is None:
            # as the Kafka listener answers a failed SASL login: after
            # connection.failed.authentication.delay.ms (password guessing goes no faster here)
            import asyncio
            await asyncio.sleep(self.broker.cfg["connection.failed.authentication.delay.ms"] / 1000)
            return self.render(request, "login.html", status=401, title="Log in", next=nxt, user=user,
                               error="Wrong user name or password.")
        resp = web.HTTPSeeOther(nxt)
        old = request.cookies.get(SESSION_COOKIE, "")
        self.sessions.end(old)
        resp.set_cookie(SESSION_COOKIE, self.sessions.start(principal), httponly=True, samesite="Strict", path="/",
                        secure=request.secure)
        raise resp

    async def logout(self, request):
        self.sessions.end(request.cookies.get(SESSION_COOKIE, ""))
        resp = web.HTTPSeeOther("/login")
        resp.del_cookie(SESSION_COOKIE, path="/")
        raise resp

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
            request[CSRF] = self.csrf_token(sid, request.get(PRINCIPAL))
            try:
                if post:
                    form = await request.post()
                    token = form.get("csrf_token", "")
                    if new or not hmac.compare_digest(str(token), request[CSRF]):
                        resp = self.render(request, "error.html", status=403, title="Forbidden",
                                           message="This form has expired or did not come from this console "
                                                   "(cross-site request forgery protection). Reload the page and "
                                                   "try again.")
                    else:
                        request[FORM] = form
                        resp = await fn(request)
                else:
                    resp = await fn(request)
            except Denied as d:
                resp = self.render(request, "denied.html", status=403, denied=d)
            except (NotFound, model.NotFound) as e:
                resp = self.render(request, "error.html", status=404, title="Not found", message=str(e))
            except (BadInput, model.BadRequest) as e:
                resp = self.render(request, "error.html", status=400, title="Bad input", message=str(e))
            except model.Conflict as e:
                resp = self.render(request, "error.html", status=409, title="Not now", message=e.message)
            except model.KafkaError as e:
                if _is_denial(e.code):
                    resp = self.render(request, "denied.html", status=403,
                                       denied=Denied(request.get(PRINCIPAL), message=e.message))
                elif e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    resp = self.render(request, "error.html", status=404, title="Not found", message=e.message)
                else:
                    resp = self.render(request, "error.html", status=400, title="Refused", message=e.message)
            except web.HTTPException:
                raise  # redirects after a form
            except Exception:
                log.exception("console page %s %s failed", request.method, request.path)
                resp = web.Response(status=500, content_type="text/html",
                                    text="<!doctype html><h1>Internal error</h1><p>The broker logged it.</p>")
            if new:
                resp.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Strict", path="/")
            return resp
        return handler

    def render(self, request, template: str, status: int = 200, **ctx) -> web.Response:
        ctx.setdefault("principal", request.get(PRINCIPAL))
        ctx["csrf_token"] = request.get(CSRF, "")
        ctx["path"] = request.path
        ctx["cluster_id"] = self.broker.cluster_id
        ctx["logged_in"] = self.sessions.is_session(request.cookies.get(SESSION_COOKIE, ""))
        html = self.env.get_template(template).render(**ctx)
        return web.Response(text=html, status=status, content_type="text/html",
                            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    def kafka(self, request) -> model.Kafka:
        """The request as a Kafka client of this broker, acting as the logged-in principal."""
        return model.Kafka(self.broker, request.get(PRINCIPAL), self._host(request), client_id="hourglass-console-ui")

    def need(self, request, op: Op, rt: RT, name: str = CLUSTER_NAME) -> None:
        """The page's own entry check (the authorizer the handlers ask), for a denial page that
        says what is missing; the model's calls are authorized again by their handlers."""
        if not reads.allowed(self.broker, request.get(PRINCIPAL), op, rt, name, self._host(request)):
            raise Denied(request.get(PRINCIPAL), f"{op.name} {rt.name.lower()} {name}")

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

    @staticmethod
    def _positions(text: str) -> dict[int, int]:
        try:
            return reads.decode_positions(text)
        except ValueError as e:
            raise BadInput(str(e)) from None

    @staticmethod
    def _time(text, what: str = "The time") -> int | None:
        try:
            ts = reads.parse_time(text)
        except ValueError:
            raise BadInput(f"{text!r} is neither an ISO date-time nor epoch milliseconds.") from None
        if ts is not None and ts < 0:
            raise BadInput(f"{what} must not be before 1970.")
        return ts

    # ---- overview ---------------------------------------------------------------------------------
    async def overview(self, request):
        b = self.broker
        k = self.kafka(request)
        topics = await model.list_topics(k)
        parts = sum(t["partitions_count"] for t in topics)
        size = 0
        for t in topics:
            for p in range(t["partitions_count"]):
                plog = b.topics.log(t["topic_name"], p)
                size += plog.size_in_bytes if plog is not None else 0
        listeners = [(lst.name, f"{h}:{port}") for lst, (h, port) in zip(b.cfg.listeners, b.bound)] \
            if getattr(b, "bound", None) else []
        http = [(name, url) for name, urls in (b.http.urls.items() if getattr(b, "http", None) else [])
                for url in urls]
        return self.render(request, "overview.html", title="Overview", topics=len(topics), partitions=parts,
                           size=size, listeners=listeners, http=http, node_id=b.node_id,
                           groups=len(await model.list_groups(k)))

    async def rates_json(self, request):
        """Produce/fetch rates over the topics the caller may describe (uPlot's aligned arrays)."""
        principal, host = request.get(PRINCIPAL), self._host(request)
        seen: dict[str, bool] = {}

        def visible(topic: str) -> bool:
            if topic not in seen:
                seen[topic] = reads.allowed(self.broker, principal, Op.DESCRIBE, RT.TOPIC, topic, host)
            return seen[topic]

        rows = self.state.rates.rates(visible, seconds=900) if self.state is not None else []
        return web.json_response({"t": [r["time_ms"] / 1000 for r in rows],
                                  "bytes_in": [round(r["bytes_in_per_sec"], 1) for r in rows],
                                  "bytes_out": [round(r["bytes_out_per_sec"], 1) for r in rows]})

    # ---- topics -----------------------------------------------------------------------------------
    async def topics(self, request, error: str | None = None, status: int = 200):
        q = request.query.get("q", "").strip()
        page = max(self._int(request.query.get("page"), "page", 1), 1)
        names = [t["topic_name"] for t in await model.list_topics(self.kafka(request))
                 if not q or q.lower() in t["topic_name"].lower()]
        pages = max(math.ceil(len(names) / TOPICS_PER_PAGE), 1)
        page = min(page, pages)
        # the summary (size, policy, time span) only for the topics this page shows
        rows = [reads.topic_row(self.broker, n) for n in names[(page - 1) * TOPICS_PER_PAGE:page * TOPICS_PER_PAGE]
                if self.broker.topics.get(n) is not None]
        tmpl = "topics_table.html" if request.headers.get("HX-Request") and request.method == "GET" else "topics.html"
        return self.render(request, tmpl, status=status, title="Topics", rows=rows, q=q, page=page, pages=pages,
                           total=len(names), error=error)

    async def create_topic(self, request):
        f = request[FORM]
        name = f.get("name", "").strip()
        partitions = self._int(f.get("partitions"), "Partitions", -1)
        configs = {}
        for line in f.get("configs", "").splitlines():
            if line.strip():
                key, sep, v = line.partition("=")
                if not sep:
                    raise BadInput(f"Config line {line!r} is not key=value.")
                configs[key.strip()] = v.strip()
        try:
            await model.create_topic(self.kafka(request), name, partitions, -1, configs)
        except model.KafkaError as e:
            if _is_denial(e.code):
                raise
            return await self.topics(request, error=e.message, status=400)
        raise web.HTTPSeeOther(f"/topics/{name}")

    async def delete_topic(self, request):
        name = self._topic(request, Op.DELETE)
        if request[FORM].get("confirm", "") != name:
            raise BadInput("Type the topic's name to confirm its deletion.")
        await model.delete_topic(self.kafka(request), name)
        raise web.HTTPSeeOther("/topics")

    async def topic(self, request):
        name = self._topic(request)
        q = request.query
        tab = q.get("tab") or ("messages" if q.get("from") or q.get("start") else "partitions")
        k = self.kafka(request)
        info = self.broker.topics.get(name)
        ctx = {"topic": name, "tab": tab, "title": name, "partitions_n": info.partitions}
        if tab == "partitions":
            ctx["partitions"] = await model.partitions(k, name)
            for row in ctx["partitions"]:
                plog = self.broker.topics.log(name, row["partition_id"])
                row["segments"] = plog.num_segments if plog is not None else 0
            p = self._int(q.get("partition"), "partition", 0)
            if not 0 <= p < info.partitions:
                raise BadInput(f"Partition {p} does not exist.")
            ctx["timeline_partition"] = p
            # the topic's Iceberg table (iceberg.mode), when the broker translates it
            lake = getattr(self.broker, "lakehouse", None)
            ctx["iceberg"] = lake.table_view(name) if lake is not None else None
            ctx["timeline"] = timeline = self._timeline(await model.segments(k, name, p))
            # the chart draws the newest 200 segments: the page never carries a huge partition's all
            ctx["timeline_json"] = json.dumps(dict(timeline, segments=timeline["segments"][-200:])).replace(
                "<", "\\u003c")  # inside <script>: no "</script>" can close it early
        elif tab == "configs":
            ctx["configs"] = await model.topic_configs(k, name)
            ctx["message"] = q.get("saved")
        elif tab == "messages":
            self.need(request, Op.READ, RT.TOPIC, name)
            ctx.update(await self._records_ctx(request, name))
        elif tab == "produce":
            self.need(request, Op.WRITE, RT.TOPIC, name)
            ctx["produced"] = q.get("produced")
        else:
            raise BadInput(f"Unknown tab {tab!r}.")
        return self.render(request, "topic.html", **ctx)

    @staticmethod
    def _timeline(seg: dict) -> dict:
        """The model's segment timeline with, per segment, whether the next retention check
        deletes it (time: its max timestamp is behind the horizon; size: listed by the
        outlook); only closed segments go, oldest first, stopping at the first survivor."""
        ret = seg["retention"]
        horizon = ret["horizon_ms"]
        by_size = set((ret.get("size") or {}).get("segments_to_delete") or [])
        out, going = [], True
        for s in seg["segments"]:
            doomed = going and not s["active"] and (
                s["base_offset"] in by_size or (horizon is not None and s["max_timestamp"] is not None
                                                and s["max_timestamp"] < horizon))
            going = doomed
            out.append({"base_offset": s["base_offset"], "next_offset": s["next_offset"], "size": s["size"],
                        "min_ts": s["min_timestamp"], "max_ts": s["max_timestamp"], "active": s["active"],
                        "deleted_next": doomed, "file": s["files"][0]})
        nxt = ret.get("time")
        return {"segments": out, "horizon_ms": horizon, "now_ms": ret["now_ms"], "retention_ms": ret["retention_ms"],
                "next_cut_ms": nxt["at_ms"] if nxt and not nxt["overdue"] else None,
                "log_start": seg["log_start_offset"]}

    async def _records_ctx(self, request, name: str) -> dict:
        q = request.query
        t = self.broker.topics.get(name)
        part = q.get("partition", "all")
        parts = list(range(t.partitions)) if part in ("", "all") else [self._int(part, "partition")]
        if any(not 0 <= p < t.partitions for p in parts):
            raise BadInput(f"Partition {part} does not exist.")
        start = q.get("start") or ("time" if q.get("from") else "beginning")
        if start not in ("beginning", "end", "time", "offset"):
            raise BadInput(f"Start must be beginning, end, time or offset, not {start!r}.")
        ts = self._time(q.get("from"), "The start time")
        if start == "time" and ts is None:
            raise BadInput("Pick a date and time to start from.")
        offset = self._int(q.get("offset"), "offset")
        if start == "offset" and offset is None:
            raise BadInput("Give an offset to start from.")
        needle = q.get("filter", "")
        fmt = q.get("format", "auto")
        positions = self._positions(q["pos"]) if q.get("pos") else None
        page, starts = await self._read_page(request, name, parts, start=start, ts=ts, offset=offset,
                                             positions=positions, needle=needle)
        params = {"partition": part, "start": start, "from": q.get("from", ""), "offset": q.get("offset", ""),
                  "filter": needle, "format": fmt}
        return {"page": page, "rows": self._rows(page["records"], fmt), "params": params, "starts": starts,
                "start_ts": ts if start == "time" and positions is None else None, "partition_choice": part,
                "next_pos": reads.encode_positions(page["next"]),
                "picker_value": fmt_ts(ts)[:-1].replace(" ", "T") if ts is not None else ""}

    async def _read_page(self, request, topic: str, parts: list[int], *, start: str, ts=None, offset=None,
                         positions: dict[int, int] | None = None, needle: str = "", page_size: int = PAGE_SIZE):
        """One page across ``parts``: each partition read by the model (Fetch, from the offset
        offsets-for-times answers for a time), merged by (timestamp, partition, offset). The
        positions to continue from are just after the last record of each partition shown."""
        k = self.kafka(request)
        bounds = None
        if positions is None and start == "offset":
            bounds = {r["partition_id"]: (r["earliest_offset"], r["latest_offset"])
                      for r in await model.partitions(k, topic)}
        results, starts = {}, {}
        for p in parts:
            kw = {"max_records": page_size, "contains": needle or None}
            if positions is not None:
                kw["offset"] = positions.get(p, 0)
            elif start == "time":
                kw["timestamp"] = ts
            elif start == "offset":
                lo, hi = bounds[p]
                kw["offset"] = min(max(offset, lo), hi)
            else:
                kw["position"] = start
            res = await model.read_records(k, topic, p, **kw)
            first = res["start"].get("offset")
            starts[p] = res["next_offset"] if first is None else first
            results[p] = res
        merged = sorted((r for res in results.values() for r in res["records"]),
                        key=lambda r: (r["timestamp"], r["partition_id"], r["offset"]))
        shown = merged[:page_size]
        nxt = {p: res["next_offset"] for p, res in results.items()}
        if len(merged) > page_size:
            for p in results:
                mine = [r["offset"] for r in shown if r["partition_id"] == p]
                nxt[p] = mine[-1] + 1 if mine else starts[p]
        exhausted = len(merged) <= page_size and all(res["end_reached"] for res in results.values())
        scanned = sum(res.get("scanned_bytes", 0) for res in results.values())
        return {"records": shown, "next": nxt, "exhausted": exhausted, "scanned_bytes": scanned}, starts

    def _rows(self, records, fmt: str) -> list[dict]:
        store = registry.store_of(self.broker) if fmt == "auto" else None
        out = []
        for r in records:
            key_b, value_b = _raw(r["key"]), _raw(r["value"])
            key, kf = registry.decode(store, key_b) or reads.render_bytes(key_b, "auto" if fmt == "json" else fmt)
            val, vf = registry.decode(store, value_b) or reads.render_bytes(value_b, fmt)
            out.append({"partition": r["partition_id"], "offset": r["offset"], "timestamp": r["timestamp"],
                        "timestamp_type": r["timestamp_type"], "key": key, "key_format": kf, "value": val,
                        "value_format": vf,
                        "headers": [(h["name"], reads.render_bytes(_raw(h["value"]), "auto")[0]) for h in r["headers"]]})
        return out

    async def records(self, request):
        """The next page of the message browser (htmx: rows replacing the "more" row)."""
        name = self._topic(request, Op.READ)
        ctx = await self._records_ctx(request, name)
        return self.render(request, "records_rows.html", topic=name, **ctx)

    async def tail(self, request):
        """Follow live: rows after ``pos`` and a new poller row carrying the positions after them
        (no ``pos``: start at each partition's high watermark, showing nothing old)."""
        name = self._topic(request, Op.READ)
        positions = self._positions(request.query.get("pos", ""))
        needle = request.query.get("filter", "")
        fmt = request.query.get("format", "auto")
        if positions:
            page, _ = await self._read_page(request, name, sorted(positions), start="offset", positions=positions,
                                            needle=needle, page_size=TAIL_PAGE)
        else:
            page = {"records": [], "next": {r["partition_id"]: r["latest_offset"]
                                            for r in await model.partitions(self.kafka(request), name)}}
        return self.render(request, "tail_rows.html", topic=name, rows=self._rows(page["records"], fmt),
                           next_pos=reads.encode_positions(page["next"]), filter=needle, format=fmt)

    async def alter_configs(self, request):
        name = self._topic(request, Op.ALTER_CONFIGS)
        f = request[FORM]
        key = f.get("name", "").strip()
        if not key:
            raise BadInput("Name the config to change.")
        op = ("DELETE", None) if f.get("action") == "reset" else ("SET", f.get("value", ""))
        k = self.kafka(request)
        try:
            await model.alter_topic_configs(k, name, [(key, *op)])
        except model.KafkaError as e:
            if _is_denial(e.code):
                raise
            ctx = {"topic": name, "tab": "configs", "title": name,
                   "partitions_n": self.broker.topics.get(name).partitions,
                   "configs": await model.topic_configs(k, name), "error": e.message}
            return self.render(request, "topic.html", status=400, **ctx)
        done = f"{key} reset to its default" if op[0] == "DELETE" else f"{key} set to {op[1]}"
        raise web.HTTPSeeOther(f"/topics/{name}?" + urlencode({"tab": "configs", "saved": done}))

    async def produce(self, request):
        name = self._topic(request, Op.WRITE)
        f = request[FORM]
        t = self.broker.topics.get(name)
        part = self._int(f.get("partition"), "Partition")
        if part is not None and not 0 <= part < t.partitions:
            raise BadInput(f"Partition {part} does not exist.")
        key = f.get("key", "")
        key_b = key.encode() if key != "" else None
        value_b = None if f.get("value_null") else f.get("value", "").encode()
        headers = []
        for line in f.get("headers", "").splitlines():
            if line.strip():
                hk, sep, hv = line.partition("=")
                if not sep:
                    raise BadInput(f"Header line {line!r} is not name=value.")
                headers.append((hk.strip(), hv.encode()))
        ts = self._time(f.get("timestamp", "").strip() or None, "The timestamp")
        res = await model.produce(self.kafka(request), name, key_b, value_b, partition=part, headers=headers,
                                  timestamp=ts)
        produced = f"{res['partition_id']}:{res['offset']}"
        raise web.HTTPSeeOther(f"/topics/{name}?" + urlencode({"tab": "produce", "produced": produced}))

    # ---- groups -----------------------------------------------------------------------------------
    async def groups(self, request):
        rows = await model.list_groups(self.kafka(request))
        return self.render(request, "groups.html", title="Consumer groups", rows=rows)

    async def _group(self, request, op: Op = Op.DESCRIBE) -> tuple[dict, list[dict]]:
        gid = request.match_info["group"]
        self.need(request, op, RT.GROUP, gid)
        k = self.kafka(request)
        try:
            g = await model.describe_group(k, gid)
        except model.KafkaError as e:
            if e.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise NotFound(f"Group {gid} does not exist.") from None
            raise
        return g, await model.group_lags(k, gid, g)

    async def group(self, request):
        g, lags = await self._group(request)
        return self.render(request, "group.html", title=g["group_id"], g=g, lags=lags,
                           total_lag=sum(r["lag"] for r in lags))

    async def lag_json(self, request):
        gid = request.match_info["group"]
        self.need(request, Op.DESCRIBE, RT.GROUP, gid)
        principal, host = request.get(PRINCIPAL), self._host(request)
        rows = self.state.lags.history(gid, lambda t: reads.allowed(self.broker, principal, Op.DESCRIBE,
                                                                   RT.TOPIC, t, host)) if self.state else []
        keys = sorted({key for r in rows for key in r["partitions"]})
        return web.json_response({"t": [r["time_ms"] / 1000 for r in rows], "total": [r["total_lag"] for r in rows],
                                  "partitions": {key: [r["partitions"].get(key) for r in rows] for key in keys}})

    def _reset_time(self, request) -> int:
        ts = self._time(request[FORM].get("to", ""), "The reset time")
        if ts is None:
            raise BadInput("Pick the date and time to reset to.")
        return ts

    @staticmethod
    def _plan_json(plan) -> str:
        return json.dumps([[r["topic_name"], r["partition_id"], r["new_offset"]] for r in plan])

    async def reset_plan(self, request):
        gid = request.match_info["group"]
        self.need(request, Op.READ, RT.GROUP, gid)
        ts = self._reset_time(request)
        plan = await model.reset_offsets(self.kafka(request), gid, timestamp=ts)
        return self.render(request, "reset.html", title=f"Reset {gid}", gid=gid, ts=ts, plan=plan,
                           to=request[FORM].get("to"), plan_json=self._plan_json(plan))

    async def reset_execute(self, request):
        gid = request.match_info["group"]
        self.need(request, Op.READ, RT.GROUP, gid)
        ts = self._reset_time(request)
        k = self.kafka(request)
        # set exactly what the confirmation showed: refuse if the answer moved since
        if request[FORM].get("plan", "") != self._plan_json(await model.reset_offsets(k, gid, timestamp=ts)):
            raise BadInput("The offsets changed since the confirmation was shown; review them again.")
        await model.reset_offsets(k, gid, timestamp=ts, execute=True)
        raise web.HTTPSeeOther("/groups/" + quote(gid, safe=""))

    # ---- transactions, schemas, security ----------------------------------------------------------
    async def transactions(self, request):
        rows = [t for t in await model.transactions(self.kafka(request)) if t["state"] in OPEN_TXN_STATES]
        return self.render(request, "transactions.html", title="Transactions", rows=rows,
                           now=self.broker.clock.now_ms())

    async def clients(self, request):
        """The metrics clients push (KIP-714), per client instance: what the broker's /metrics
        shows, for operators without a Prometheus."""
        self.need(request, Op.DESCRIBE_CONFIGS, RT.CLUSTER)
        pushed = getattr(self.broker, "pushed_metrics", None)
        rows = sorted((pushed.clients() if pushed is not None else {}).items(),
                      key=lambda kv: (kv[1]["labels"]["client_id"], kv[0]))
        return self.render(request, "clients.html", title="Clients", rows=rows)

    def _registry(self, request):
        store = registry.store_of(self.broker)
        principal, host = request.get(PRINCIPAL), self._host(request)
        return store, (lambda subject: registry.may_read(self.broker, principal, host, subject))

    async def schemas(self, request):
        store, visible = self._registry(request)
        urls = self.broker.http.urls.get("schema-registry", []) if getattr(self.broker, "http", None) else []
        rows = registry.subjects(store, visible) if store is not None else []
        return self.render(request, "schemas.html", title="Schemas", registry=store, registry_urls=urls, rows=rows,
                           serving=getattr(self.broker, "schema_registry", None) is not None)

    async def schema_subject(self, request):
        """A subject's versions, one version's schema, and a diff between two versions."""
        subject = request.match_info["subject"]
        store, visible = self._registry(request)
        if store is None:
            raise NotFound("This broker serves no Schema Registry (schema.registry.listeners).")
        if not visible(subject):
            from schema_registry.authz import topic_of
            raise Denied(request.get(PRINCIPAL), f"READ topic {topic_of(subject)} (subject {subject})")
        store.catch_up()
        versions = {e.version: e for e in store.versions(subject)} if subject in store.subjects() else {}
        if not versions:
            raise NotFound(f"Subject {subject} does not exist.")
        nums = sorted(versions)
        q = request.query
        b = self._int(q.get("b"), "version", nums[-1])
        a = self._int(q.get("a"), "version", nums[-2] if len(nums) > 1 else nums[-1])
        for v in (a, b):
            if v not in versions:
                raise NotFound(f"Subject {subject} has no version {v}.")
        ea, eb = versions[a], versions[b]
        text_a, text_b = registry.pretty(ea.schema_type, ea.schema), registry.pretty(eb.schema_type, eb.schema)
        return self.render(request, "schema.html", title=subject, subject=subject, versions=[versions[v] for v in nums],
                           a=ea, b=eb, text_b=text_b,
                           diff=registry.diff(text_a, text_b, f"version {a}", f"version {b}") if a != b else [])

    async def security(self, request):
        self.need(request, Op.DESCRIBE, RT.CLUSTER)
        k = self.kafka(request)
        try:
            acls = await model.acls(k)
        except model.KafkaError as e:
            if e.code != ErrorCode.SECURITY_DISABLED:
                raise
            acls = None
        return self.render(request, "security.html", title="Security", acls=acls,
                           users=await model.scram_users(k), auth_required=self.users.required)
