"""A real S3-compatible server for the tests: moto's server mode (``moto[server]``, the test
extras), a subprocess speaking S3's HTTP API on a loopback port, started and stopped at will
(a store that is down, then comes up, on the same port)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.process import ServerProcess

REGION = "us-east-1"
#: moto's server accepts any key pair unless IAM is switched on; these are what the broker signs with
ACCESS_KEY_ID = "hourglass-test-key"
SECRET_ACCESS_KEY = "hourglass-test-secret-6f1c"


class S3Server(ServerProcess):
    kind = "moto S3 server"

    def __init__(self, log_path: Path, port: int, *, iam: bool = False):
        """``iam``: requests must be signed by a key of moto's IAM (``make_user``), as on S3;
        otherwise moto accepts any key pair."""
        super().__init__()
        self.log_path, self.port, self.iam = log_path, port, iam

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_paths(self) -> list[Path]:
        return [self.log_path]

    def start(self, timeout: float = 30.0) -> "S3Server":
        env = dict(os.environ)
        if self.iam:  # moto's switch: the first N requests unsigned (make_user's three), then IAM's keys only
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env)
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self._exited_before_ready() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's S3 server did not start\n{self.log_tail()}") from None
                time.sleep(0.05)

    def client(self, service: str = "s3", key_id: str = ACCESS_KEY_ID, secret: str = SECRET_ACCESS_KEY):
        import boto3
        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=key_id, aws_secret_access_key=secret)

    def make_user(self) -> tuple[str, str]:
        """(access key id, secret) of a new IAM user allowed everything on S3 (with ``iam``)."""
        iam = self.client("iam")
        iam.create_user(UserName="hourglass")
        iam.put_user_policy(UserName="hourglass", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="hourglass")["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out = []
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out.extend(o["Key"] for o in page.get("Contents", ()))
        return out


def broker_overrides(endpoint: str, warehouse: str, *, vend: bool = True) -> dict[str, object]:
    """The broker keys of an S3 warehouse on ``endpoint`` (path-style, as self-hosted stores)."""
    return {"iceberg.warehouse": warehouse, "iceberg.s3.endpoint": endpoint, "iceberg.s3.region": REGION,
            "iceberg.s3.access.key.id": ACCESS_KEY_ID, "iceberg.s3.secret.access.key": SECRET_ACCESS_KEY,
            "iceberg.s3.path.style.access": True, "iceberg.catalog.vended.credentials": vend}
