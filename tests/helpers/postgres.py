"""A throwaway PostgreSQL cluster (Debian's packages, ``scripts/install_deps.sh``) for CDC tests.

``PostgresCluster`` runs ``initdb`` into a fresh temp dir and starts the server with
``pg_ctl`` on a free loopback port with ``wal_level=logical`` (what Debezium's pgoutput
decoding needs). PostgreSQL refuses to run as root: when the tests run as root, every server
command runs as the ``postgres`` user Debian's package created, and the data dir belongs to it.
A ``debezium`` role with REPLICATION and a password is created for the connector.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.helpers.kafka_oracle import free_port

USER, PASSWORD, DATABASE = "debezium", "debezium-secret", "shop"


def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run `make deps` (scripts/install_deps.sh)")
    return Path(found[-1]).parent


class PostgresCluster:
    def __init__(self):
        self.bin = pg_bin()
        self.run_as = "postgres" if os.geteuid() == 0 else None
        self.dir = Path(tempfile.mkdtemp(prefix="hourglass-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.host = "127.0.0.1"
        if self.run_as:
            pw = pwd.getpwnam(self.run_as)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)

    def _run(self, *argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = list(argv)
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}\n{self.log_tail()}")
        return r

    def start(self) -> "PostgresCluster":
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        conf = {
            "listen_addresses": "'127.0.0.1'", "port": self.port, "unix_socket_directories": f"'{self.dir}'",
            "wal_level": "logical", "max_wal_senders": 10, "max_replication_slots": 10,
            "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
            "shared_buffers": "64MB", "max_connections": 50,
        }
        with open(self.data / "postgresql.conf", "a") as f:
            f.write("".join(f"{k} = {v}\n" for k, v in conf.items()))
        with open(self.data / "pg_hba.conf", "a") as f:
            f.write("host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "postgres.log"), "-w",
                  "-t", "60", "start")
        self.psql_admin(f"CREATE ROLE {USER} WITH LOGIN REPLICATION SUPERUSER PASSWORD '{PASSWORD}'")
        self.psql_admin(f"CREATE DATABASE {DATABASE} OWNER {USER}")
        return self

    def psql_admin(self, sql: str, db: str = "postgres") -> str:
        return self._run(str(self.bin / "psql"), "-h", str(self.dir), "-p", str(self.port), "-U", "postgres",
                         "-d", db, "-v", "ON_ERROR_STOP=1", "-qAtc", sql).stdout

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user={USER} password={PASSWORD} dbname={DATABASE}"

    def connect(self):
        import psycopg
        return psycopg.connect(self.dsn, autocommit=True)

    def connector_config(self, **extra) -> dict[str, object]:
        """Debezium's PostgreSQL connector on this cluster, decoding with pgoutput."""
        return {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                "database.hostname": self.host, "database.port": self.port, "database.user": USER,
                "database.password": PASSWORD, "database.dbname": DATABASE, "plugin.name": "pgoutput",
                "tasks.max": 1, **extra}

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, max_chars: int = 4000) -> str:
        try:
            return (self.dir / "postgres.log").read_text(errors="replace")[-max_chars:]
        except OSError:
            return ""
