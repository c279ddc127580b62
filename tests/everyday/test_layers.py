"""The seams the layout promises, read from the imports themselves (every import, at module
level or inside a function): protocol/ knows no sockets, files or other rooms; storage/ knows
record-batch bytes and errors of protocol/ but no request/response structs and no broker; the
Kafka core (broker/) names none of the rooms beside it (web/, schema_registry/, console/,
hourglass/): the composition root, hourglass.app, wires those in through broker.extensions."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imports_of(package: str) -> dict[str, set[str]]:
    """module path -> the top-level-qualified names it imports."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        out[str(path.relative_to(ROOT))] = names
    return out


# `python -m broker` is the `hourglass` command's second name (make run, the image, the tests'
# brokers): a door into the composition root, not part of the core
ENTRY_POINTS = {"broker/__main__.py"}


def offenders(package: str, forbidden) -> list[str]:
    return [f"{mod} imports {name}" for mod, names in imports_of(package).items()
            if mod not in ENTRY_POINTS for name in sorted(names) if forbidden(name)]


def _under(name: str, *roots: str) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


@pytest.mark.parametrize("package, forbidden, why", [
    ("broker", lambda n: _under(n, "web", "schema_registry", "console", "hourglass", "pipeline", "lakehouse"),
     "the Kafka core names no room beside it; hourglass.app wires them in (broker.extensions)"),
    ("protocol", lambda n: _under(n, "asyncio", "socket", "broker", "storage", "web", "hourglass"),
     "the codec is sans-IO"),
    ("storage", lambda n: _under(n, "broker", "web", "hourglass", "protocol.messages", "protocol.header"),
     "storage knows record-batch bytes, not requests, responses or the broker"),
])
def test_no_arrow_runs_up(package, forbidden, why):
    assert offenders(package, forbidden) == [], why
