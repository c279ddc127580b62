"""A small REST v3 client for the console tests: urllib, JSON in and out, basic auth."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request


class Rest:
    def __init__(self, url: str, cluster_id: str, auth: tuple[str, str] | None = None):
        self.url = url.rstrip("/")
        self.cluster_id = cluster_id
        self.auth = auth

    @property
    def c(self) -> str:
        """The cluster's path under /v3."""
        return f"/v3/clusters/{self.cluster_id}"

    def call(self, method: str, path: str, body=None, *, raw: bytes | None = None, auth="default",
             timeout: float = 30) -> tuple[int, object, dict]:
        """(status, parsed JSON body or None, headers)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, method=method, data=data)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        auth = self.auth if auth == "default" else auth
        if auth is not None:
            req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read()
                return r.status, _parse(text), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, _parse(e.read()), dict(e.headers)

    def get(self, path: str, **kw):
        return self.call("GET", path, **kw)

    def ok(self, method: str, path: str, body=None, status: int = 200, **kw):
        s, b, _ = self.call(method, path, body, **kw)
        assert s == status, (s, b)
        return b


def _parse(text: bytes):
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.decode().splitlines() if line.strip()]
