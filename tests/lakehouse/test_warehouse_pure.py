"""The S3 warehouse's pure decisions: the broker keys' validation (``broker.config``), their
mapping to pyiceberg's FileIO properties, what a reader is handed (``lakehouse.warehouse``),
and the retry delays."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from broker.config import BrokerConfig, ConfigError, display_value
from lakehouse.warehouse import (RETRY_FIRST_MS, RETRY_MAX_MS, Warehouse, describe_failure, other_catalogs,
                                 retry_delay_ms, warehouse_of)

S3 = {"iceberg.warehouse": "s3://lake/tables/", "iceberg.s3.endpoint": "http://127.0.0.1:9000/",
      "iceberg.s3.access.key.id": "AKID", "iceberg.s3.secret.access.key": "s3cret",
      "iceberg.s3.path.style.access": "true", "log.dirs": "/data/kafka"}


def test_keys_map_to_pyiceberg_fileio_properties():
    w = warehouse_of(BrokerConfig(S3))
    assert w.location == "s3://lake/tables"  # the trailing / dropped
    assert w.io == {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1",
                    "s3.force-virtual-addressing": "false", "s3.access-key-id": "AKID",
                    "s3.secret-access-key": "s3cret"}
    assert w.catalog_dir == Path("/data/kafka/.hourglass/iceberg")
    assert w.catalog_db.parent == w.catalog_dir and w.catalog_db.name.startswith("catalog-s3-lake_tables-")
    assert "s3cret" not in repr(w) and display_value("iceberg.s3.secret.access.key", "s3cret") == "[hidden]"
    virtual = warehouse_of(BrokerConfig({**S3, "iceberg.s3.path.style.access": "false"}))
    assert virtual.io["s3.force-virtual-addressing"] == "true"


def test_the_default_warehouse_is_the_data_dir():
    w = warehouse_of(BrokerConfig({"log.dirs": "/data/kafka"}))
    assert not w.is_s3 and w.io == {} and w.reader_config("vended-credentials") == ({}, [])
    assert w.catalog_db == Path("/data/kafka/.hourglass/iceberg/catalog.db")


def test_other_warehouses_have_their_own_pointer_store():
    a = warehouse_of(BrokerConfig({**S3, "iceberg.warehouse": "s3://lake/a"}))
    b = warehouse_of(BrokerConfig({**S3, "iceberg.warehouse": "s3://lake/b"}))
    assert a.catalog_db != b.catalog_db and a.catalog_db.parent == b.catalog_db.parent


def test_a_reader_gets_the_store_and_the_keys_only_when_vended_and_asked():
    store = {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1", "client.region": "us-east-1",
             "s3.path-style-access": "true", "s3.force-virtual-addressing": "false"}
    keep = warehouse_of(BrokerConfig(S3))
    assert keep.reader_config("vended-credentials") == (store, [])
    vend = warehouse_of(BrokerConfig({**S3, "iceberg.catalog.vended.credentials": "true"}))
    assert vend.reader_config(None) == (store, [])
    assert vend.reader_config("remote-signing") == (store, [])
    config, creds = vend.reader_config("remote-signing, vended-credentials")
    keys = {"s3.access-key-id": "AKID", "s3.secret-access-key": "s3cret"}
    assert config == {**store, **keys}
    assert creds == [{"prefix": "s3://lake/tables", "config": {**store, **keys}}]


@pytest.mark.parametrize("raw, reason", [
    ({"iceberg.warehouse": "s3://ab"}, "not a valid S3 bucket name"),
    ({"iceberg.warehouse": "s3://-lake"}, "not a valid S3 bucket name"),
    ({"iceberg.warehouse": "s3://la..ke"}, "not a valid S3 bucket name"),
    ({"iceberg.warehouse": "s3://lake//x"}, "empty path segment"),
    ({"iceberg.warehouse": "s3a://lake"}, "Expected s3://BUCKET"),
    ({"iceberg.warehouse": "file:///tmp/lake"}, "Expected s3://BUCKET"),
    ({"iceberg.s3.endpoint": "localhost:9000"}, "Expected http://HOST:PORT"),
    ({"iceberg.s3.endpoint": "http://host:9000/path"}, "no path"),
    ({"iceberg.s3.endpoint": "http://user@host:9000"}, "no path, query or user"),
    ({"iceberg.s3.endpoint": "http://host:99999"}, "Port out of range"),
    ({"iceberg.s3.region": "US East"}, "region name"),
    ({"iceberg.s3.path.style.access": "yes"}, "either true or false"),
    ({"iceberg.s3.secret.access.key": ""}, "go together"),
    ({"iceberg.catalog.vended.credentials": "true", "iceberg.s3.access.key.id": "",
      "iceberg.s3.secret.access.key": ""}, "needs iceberg.s3.access.key.id"),
])
def test_malformed_values_refuse_with_the_reason(raw, reason):
    with pytest.raises(ConfigError, match=reason.replace(".", r"\.").replace("/", r"\/")):
        BrokerConfig({**S3, **raw})


def test_store_keys_without_an_s3_warehouse_refuse():
    with pytest.raises(ConfigError, match="iceberg.s3.region set, but iceberg.warehouse is not an s3:// location"):
        BrokerConfig({"iceberg.s3.region": "eu-west-1"})


def test_the_failure_line_names_the_store():
    w = Warehouse("s3://lake/t", Path("/x"), {"s3.endpoint": "http://h:1", "s3.secret-access-key": "s3cret"})
    line = describe_failure(w, OSError("AWS Error NETWORK_CONNECTION\n during HeadObject"))
    assert line == ("the warehouse s3://lake/t at http://h:1 failed: AWS Error NETWORK_CONNECTION during HeadObject "
                    "(nothing answers at iceberg.s3.endpoint)")
    assert describe_failure(w, OSError("AWS Error ACCESS_DENIED during HeadBucket")).endswith(
        "(check iceberg.s3.access.key.id / iceberg.s3.secret.access.key and what the key may do)")
    assert describe_failure(w, OSError("a reason of its own")).endswith("failed: a reason of its own")
    assert "s3cret" not in line
    aws = Warehouse("s3://lake/t", Path("/x"), {"s3.region": "eu-west-1"})
    assert "at AWS S3 (eu-west-1) failed" in describe_failure(aws, OSError("x"))


@given(st.integers(1, 10_000))
def test_retry_delays_grow_and_are_capped(n):
    d = retry_delay_ms(n)
    assert RETRY_FIRST_MS <= d <= RETRY_MAX_MS
    assert d >= retry_delay_ms(n - 1) if n > 1 else d == RETRY_FIRST_MS


def _bucket_ok(name: str) -> bool:
    """S3's bucket naming rules, one by one (the model ``iceberg.warehouse`` is held to)."""
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
    return (3 <= len(name) <= 63 and set(name) <= allowed and name[0].isalnum() and name[-1].isalnum()
            and ".." not in name)


@given(st.text(alphabet="abcz09.-_A/", min_size=0, max_size=70))
def test_bucket_names_are_accepted_exactly_by_s3s_rules(name):
    from broker.config import _warehouse_uri
    bucket = name.split("/")[0]
    try:
        got = _warehouse_uri(f"s3://{name}")
    except ValueError:
        got = None
    if not _bucket_ok(bucket):
        assert got is None
    else:
        segments = [x for x in name.split("/")[1:]]
        while segments and segments[-1] == "":  # trailing slashes are dropped
            segments.pop()
        ok = "" not in segments
        assert (got is not None) == ok
        if ok:
            assert got == "s3://" + "/".join([bucket, *segments])


def test_the_pointer_stores_of_other_warehouses_are_named(tmp_path):
    s3 = warehouse_of(BrokerConfig({**S3, "log.dirs": str(tmp_path)}))
    local = warehouse_of(BrokerConfig({"log.dirs": str(tmp_path)}))
    assert other_catalogs(s3) == [] and other_catalogs(local) == []  # nothing there yet
    s3.catalog_dir.mkdir(parents=True)
    local.catalog_db.touch()
    assert other_catalogs(s3) == [local.catalog_db] and other_catalogs(local) == []
    s3.catalog_db.touch()
    assert other_catalogs(local) == [s3.catalog_db] and other_catalogs(s3) == [local.catalog_db]
