"""Where the topics' tables keep their files: the warehouse (issue 41, "Catalog and storage").

By default the warehouse is ``<first log dir>/.hourglass/iceberg/`` (the data dir moves whole);
with ``iceberg.warehouse=s3://BUCKET[/PREFIX]`` the Parquet data files, manifests and metadata
files go to an S3-compatible store through pyiceberg's FileIO (pyarrow's ``S3FileSystem``),
while the catalog's pointer store (pyiceberg's ``SqlCatalog`` over SQLite) stays in the first
log dir: one SQLite file per warehouse location, so pointing the broker at another warehouse
starts tables there afresh instead of writing new snapshots beside files of the old one.

The broker keys map to pyiceberg's FileIO properties (``pyiceberg.io``) as follows:

===============================  ============================================================
``iceberg.s3.endpoint``          ``s3.endpoint``
``iceberg.s3.region``            ``s3.region`` (given always: without it pyiceberg asks AWS where
                                 the bucket is, which no other store answers)
``iceberg.s3.access.key.id``     ``s3.access-key-id``
``iceberg.s3.secret.access.key`` ``s3.secret-access-key``
``iceberg.s3.path.style.access`` ``s3.force-virtual-addressing`` = its negation
===============================  ============================================================

Readers get, from the REST catalog (``reader_config``): ``s3.endpoint``, ``client.region`` (the
REST spec's name) and ``s3.region``, ``s3.path-style-access`` (Iceberg Java's S3FileIO) and
``s3.force-virtual-addressing`` (pyiceberg); the key pair only with
``iceberg.catalog.vended.credentials=true`` and to a request asking for vended credentials
(``X-Iceberg-Access-Delegation``), as ``storage-credentials`` (and in ``config``, which older
clients read). The secret is never logged: ``__repr__`` hides it.

Failures of the store (no such endpoint, no bucket, wrong keys) surface as pyarrow ``OSError``
in the worker thread: ``describe_failure`` turns them into one line naming the warehouse and
the endpoint; translation retries after ``retry_delay_ms`` (growing, capped), resuming from
the table's current snapshot, and the broker serves Kafka throughout.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

#: the longest wait between two attempts of a failing topic (and the first one)
RETRY_MAX_MS = 10_000
RETRY_FIRST_MS = 500
#: REST spec: the header a client sends to say it takes vended credentials
ACCESS_DELEGATION = "X-Iceberg-Access-Delegation"


@dataclass(frozen=True)
class Warehouse:
    """A warehouse: its location (``file://`` URI or ``s3://bucket[/prefix]``), the local
    directory of the catalog's SQLite file, and the FileIO properties the broker writes with."""

    location: str
    catalog_dir: Path
    io: dict[str, str] = field(default_factory=dict)
    vend: bool = False

    def __repr__(self) -> str:  # never the secret
        return f"Warehouse({self.location!r}, endpoint={self.io.get('s3.endpoint', '')!r})"

    @property
    def is_s3(self) -> bool:
        return self.location.startswith("s3://")

    @property
    def catalog_db(self) -> Path:
        """The SQLite pointer store: ``catalog.db`` for the default warehouse (as before), one
        file per other location (named by a digest of it), all in the first log dir."""
        if not self.is_s3:
            return self.catalog_dir / "catalog.db"
        stem = re.sub(r"[^a-z0-9.-]+", "_", self.location[len("s3://"):])[:60]
        digest = hashlib.sha256(self.location.encode()).hexdigest()[:12]
        return self.catalog_dir / f"catalog-s3-{stem}-{digest}.db"

    def reader_config(self, delegation: str | None = None) -> tuple[dict[str, str], list[dict]]:
        """(LoadTable ``config``, ``storage-credentials``) for a reader: what it needs to reach
        the store, and the broker's key pair only when vending is on and the request asked for
        vended credentials (``delegation``: the request's X-Iceberg-Access-Delegation)."""
        if not self.is_s3:
            return {}, []
        config = store_config(self.io)
        creds: list[dict] = []
        asked = "vended-credentials" in [d.strip() for d in (delegation or "").split(",")]
        if self.vend and asked and "s3.access-key-id" in self.io:
            keys = {k: self.io[k] for k in ("s3.access-key-id", "s3.secret-access-key")}
            creds = [{"prefix": self.location, "config": {**config, **keys}}]
            config = {**config, **keys}
        return config, creds


def store_config(io: dict[str, str]) -> dict[str, str]:
    """The non-secret properties a reader needs, in both Iceberg Java's and pyiceberg's names."""
    out = {}
    if io.get("s3.endpoint"):
        out["s3.endpoint"] = io["s3.endpoint"]
    if io.get("s3.region"):
        out["s3.region"] = out["client.region"] = io["s3.region"]
    if "s3.force-virtual-addressing" in io:
        virtual = io["s3.force-virtual-addressing"] == "true"
        out["s3.force-virtual-addressing"] = "true" if virtual else "false"
        out["s3.path-style-access"] = "false" if virtual else "true"
    return out


def io_properties(values) -> dict[str, str]:
    """pyiceberg FileIO properties of the ``iceberg.s3.*`` broker keys (``values[key]`` typed)."""
    io = {"s3.region": values["iceberg.s3.region"],
          "s3.force-virtual-addressing": "false" if values["iceberg.s3.path.style.access"] else "true"}
    if values["iceberg.s3.endpoint"]:
        io["s3.endpoint"] = values["iceberg.s3.endpoint"]
    if values["iceberg.s3.access.key.id"]:
        io["s3.access-key-id"] = values["iceberg.s3.access.key.id"]
        io["s3.secret-access-key"] = values["iceberg.s3.secret.access.key"]
    return io


def warehouse_dir(log_dirs) -> Path:
    """The default warehouse, and the catalog's directory of any: beside the broker's own state
    in its first log dir."""
    return Path(log_dirs[0]) / ".hourglass" / "iceberg"


def local_warehouse(directory: Path) -> Warehouse:
    return Warehouse(directory.resolve().as_uri(), directory)


def warehouse_of(cfg) -> Warehouse:
    """The broker's warehouse from its configuration (``BrokerConfig``: validated already)."""
    local = warehouse_dir(cfg.log_dirs)
    location = cfg["iceberg.warehouse"]
    if not location:
        return local_warehouse(local)
    return Warehouse(location, local, io_properties(cfg), cfg["iceberg.catalog.vended.credentials"])


#: (words in the store's error, which broker key to look at): the AWS SDK's error names as
#: pyarrow reports them, and S3's error codes
_HINTS = (
    (("NETWORK_CONNECTION", "Could not connect", "Could not resolve host", "Timeout was reached"),
     "nothing answers at iceberg.s3.endpoint"),
    (("NO_SUCH_BUCKET", "NoSuchBucket", "The specified bucket does not exist", "does not exist"),
     "create the bucket, or fix iceberg.warehouse"),
    (("ACCESS_DENIED", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "INVALID_ACCESS_KEY_ID",
      "SIGNATURE_DOES_NOT_MATCH"),
     "check iceberg.s3.access.key.id / iceberg.s3.secret.access.key and what the key may do"),
)


def other_catalogs(warehouse: Warehouse) -> list[Path]:
    """Pointer stores of other warehouse locations beside this one's: tables written before
    ``iceberg.warehouse`` changed, which stay where they are (not moved, not served)."""
    if not warehouse.catalog_dir.is_dir():
        return []
    return sorted(p for p in warehouse.catalog_dir.glob("catalog*.db") if p != warehouse.catalog_db)


def describe_failure(warehouse: Warehouse, exc: BaseException) -> str:
    """One line on a failed round against the store: where, the store's own reason, and which
    broker key to look at when the reason says."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if not warehouse.is_s3:
        return reason
    where = warehouse.io.get("s3.endpoint") or f"AWS S3 ({warehouse.io.get('s3.region')})"
    hint = next((h for words, h in _HINTS if any(w in reason for w in words)), None)
    return f"the warehouse {warehouse.location} at {where} failed: {reason}" + (f" ({hint})" if hint else "")


def retry_delay_ms(failures_in_a_row: int) -> int:
    """How long a topic waits after its n-th failure in a row (n >= 1): doubling, capped."""
    return min(RETRY_FIRST_MS << min(max(failures_in_a_row - 1, 0), 16), RETRY_MAX_MS)


def probe(warehouse: Warehouse) -> str | None:
    """Whether the store answers for the warehouse's bucket (None) or why not (a line): the
    broker logs it at start, so a wrong endpoint or key shows before any topic is translated."""
    if not warehouse.is_s3:
        return None
    from pyarrow.fs import FileType
    from pyiceberg.io.pyarrow import PyArrowFileIO
    bucket = warehouse.location[len("s3://"):].split("/")[0]
    try:
        fs = PyArrowFileIO(dict(warehouse.io)).fs_by_scheme("s3", bucket)
        if fs.get_file_info(bucket).type == FileType.NotFound:
            return describe_failure(warehouse, FileNotFoundError(f"bucket {bucket} does not exist"))
    except Exception as exc:  # noqa: BLE001 - the reason is the answer
        return describe_failure(warehouse, exc)
    return None
