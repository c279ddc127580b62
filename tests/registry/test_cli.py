"""``hourglass schemas`` against a running registry."""
from __future__ import annotations

import json
import time

from hourglass.cli.main import main
from hourglass.embedded import EmbeddedBroker

V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
V2 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                           {"name": "b", "type": "int", "default": 0}]})


def test_schemas_cli(tmp_path, capsys):
    with EmbeddedBroker(schema_registry=True) as b:
        url = ["schemas", "--url", b.schema_registry_url]
        f = tmp_path / "r.avsc"
        f.write_text(V1)
        assert main([*url, "register", "orders-value", "--file", str(f)]) == 0
        assert capsys.readouterr().out.strip() == "1"
        t1 = int(time.time() * 1000)
        time.sleep(0.02)
        assert main([*url, "register", "orders-value", "--schema", V2]) == 0
        assert capsys.readouterr().out.strip() == "2"
        assert main([*url, "list"]) == 0
        assert capsys.readouterr().out.strip() == "orders-value\tversions 1,2"
        assert main([*url, "get", "orders-value"]) == 0
        assert json.loads(capsys.readouterr().out)["version"] == 2
        assert main([*url, "get", "orders-value", "--at", str(t1), "--schema-only"]) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(V1)
        assert main([*url, "get", "--id", "2"]) == 0
        assert json.loads(json.loads(capsys.readouterr().out)["schema"]) == json.loads(V2)
        assert main([*url, "config"]) == 0
        assert json.loads(capsys.readouterr().out) == {"compatibilityLevel": "BACKWARD"}
        assert main([*url, "config", "orders-value", "--set", "full"]) == 0
        assert json.loads(capsys.readouterr().out) == {"compatibility": "FULL"}
        assert main([*url, "register", "orders-value", "--schema", '{"type":"record","name":"R","fields":[{"name":"z","type":"int"}]}']) == 1
        assert "incompatible" in capsys.readouterr().err
        assert main([*url, "delete", "orders-value", "--version", "1"]) == 0
        assert capsys.readouterr().out.strip() == "1"
        assert main([*url, "delete", "orders-value", "--permanent"]) == 0
        assert json.loads(capsys.readouterr().out) == [1, 2]  # every version, the soft-deleted too
        assert main([*url, "list", "--deleted"]) == 0
        assert capsys.readouterr().out.strip() == ""
        assert main([*url, "get", "nope"]) == 1
        assert "Subject 'nope' not found. (HTTP 404, error code 40401)" in capsys.readouterr().err


def test_unreachable(capsys):
    assert main(["schemas", "--url", "http://127.0.0.1:9", "list"]) == 1
    assert "cannot reach" in capsys.readouterr().err
