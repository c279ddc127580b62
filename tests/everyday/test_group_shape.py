"""The shape of broker/groups, read from the code itself (ast; every import, at module level or
inside a function), after Kafka's group coordinator: each group type (classic, consumer,
Streams; share groups in broker/share) is its own set of modules behind the one coordinator
front handlers call; what the types share (offsets, timers, errors, request checks, records of
the internal topics) lives in shared modules with public names.

Held here:
- no import cycle among broker/groups modules;
- a group type's module imports shared modules and its own type's, never a sibling type's
  (one kept exception, Kafka's own: KIP-848's online migration converts classic groups to
  consumer groups and back), and never the front; shared modules import no group type;
- a group type's coordinator calls no sibling type's methods through ``self`` (the front
  composes them), the same kept exception aside;
- no module uses another module's underscore names: no ``from x import _y``, no ``x._y``,
  and no ``self._y`` that only another module defines (the front is composed of the group
  types' coordinator classes, so a borrowed private method would not show as an import).
"""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ROOT / "broker" / "groups"
PACKAGE = "broker.groups"

SHARED, FRONT = "shared", "front"
ROLES = {
    # shared by every group type
    "base": SHARED, "errors": SHARED, "validation": SHARED, "timers": SHARED, "schemas": SHARED,
    "group_configs": SHARED, "internal_topics": SHARED,
    # the group types
    "group": "classic", "classic_records": "classic", "classic_coordinator": "classic",
    "consumer_group": "consumer", "consumer_coordinator": "consumer", "reconciliation": "consumer",
    "assignors": "consumer",
    "streams_group": "streams", "streams_coordinator": "streams", "streams_records": "streams",
    "streams_assignment": "streams", "streams_topology": "streams",
    # the front: the coordinator handlers call (dispatching by group type), and the replay of
    # __consumer_offsets into every type's groups (Kafka's GroupCoordinatorShard.replay)
    "coordinator": FRONT, "offsets_log": FRONT,
}
KEPT_CROSS_TYPE = {
    ("consumer", "classic"): "KIP-848 online migration converts a classic group into a consumer group and back "
                             "(Kafka's ConsumerGroup.fromClassicGroup / convertToClassicGroup)",
}
# share groups are a group type of their own, in broker/share: only shared modules of broker/groups
SHARE_PACKAGE = ROOT / "broker" / "share"


def _submodule(module: str, package: str) -> str:
    """``package.m.x`` -> ``m``."""
    return module[len(package) + 1:].split(".")[0]


def _modules(pkg_dir: Path) -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(pkg_dir.glob("*.py")) if p.stem != "__init__"}


def _imported_modules(tree: ast.Module, package: str, names: set[str]) -> dict[str, str]:
    """local alias -> module of ``package`` (for ``import package.m as a`` / ``from package import m``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == package:
            out.update({a.asname or a.name: a.name for a in node.names if a.name in names})
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name.startswith(package + "."):
                    out[a.asname] = _submodule(a.name, package)
    return out


def import_graph(modules: dict[str, ast.Module], package: str) -> dict[str, set[str]]:
    """module -> the modules of ``package`` it imports, anywhere in its body."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == package:
                    graph[name] |= {a.name for a in node.names if a.name in modules}
                elif node.module.startswith(package + "."):
                    graph[name].add(_submodule(node.module, package))
            elif isinstance(node, ast.Import):
                graph[name] |= {_submodule(a.name, package) for a in node.names if a.name.startswith(package + ".")}
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_privates(tree: ast.Module) -> set[str]:
    """Underscore names a module defines: its functions, classes and globals, the methods of its
    classes, and the ``self._x`` attributes it assigns."""
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name):
                    out.add(t.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            out |= {b.name for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
            out |= {t.id for b in node.body if isinstance(b, (ast.Assign, ast.AnnAssign))
                    for t in (b.targets if isinstance(b, ast.Assign) else [b.target]) if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id == "self"):
            out.add(node.attr)
    return {n for n in out if _private(n)}


def private_crossings(modules: dict[str, ast.Module], package: str) -> list[str]:
    defined = {m: _defined_privates(t) for m, t in modules.items()}
    found = []
    for name, tree in modules.items():
        aliases = _imported_modules(tree, package, set(modules))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package + "."):
                found += [f"{name} imports {node.module}.{a.name} (line {node.lineno})"
                          for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _private(node.attr):
                if node.value.id in aliases:
                    found.append(f"{name} uses {aliases[node.value.id]}.{node.attr} (line {node.lineno})")
                elif node.value.id == "self" and node.attr not in defined[name]:
                    owners = sorted(m for m in modules if node.attr in defined[m])
                    if owners:
                        found.append(f"{name} uses self.{node.attr} of {', '.join(owners)} (line {node.lineno})")
    return sorted(set(found))


def sibling_calls(modules: dict[str, ast.Module], roles: dict[str, str]) -> list[str]:
    """``self.m(...)`` in a group type's module where ``m`` is a method only a sibling type's
    module defines: the front composes the types' coordinator classes, so such a call couples
    two types without an import."""
    methods: dict[str, set[str]] = {}
    for name, tree in modules.items():
        methods[name] = {b.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                         for b in node.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = []
    for name, tree in modules.items():
        role = roles[name]
        if role in (SHARED, FRONT):
            continue
        used = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
        for attr in sorted(used - methods[name]):
            owners = {roles[m] for m in modules if attr in methods[m]}
            if owners and not owners & {role, SHARED, FRONT}:
                for other in sorted(owners):
                    if (role, other) not in KEPT_CROSS_TYPE:
                        found.append(f"{role} module {name} calls self.{attr} of group type {other}")
    return found


def layer_offenders(graph: dict[str, set[str]], roles: dict[str, str]) -> list[str]:
    found = []
    for mod, targets in sorted(graph.items()):
        role = roles[mod]
        for t in sorted(targets):
            trole = roles[t]
            if role == FRONT or trole == SHARED or trole == role:
                continue
            if role == SHARED:
                found.append(f"shared module {mod} imports {trole} module {t}")
            elif trole == FRONT:
                found.append(f"{role} module {mod} imports the front {t}")
            elif (role, trole) not in KEPT_CROSS_TYPE:
                found.append(f"{role} module {mod} imports sibling group type {trole}'s {t}")
    return found


# ---- the tests ------------------------------------------------------------------------------------
MODULES = _modules(GROUPS)
GRAPH = import_graph(MODULES, PACKAGE)


def test_every_groups_module_has_a_place():
    assert sorted(set(MODULES) - set(ROLES)) == [], "give the new module a role in ROLES"
    assert sorted(set(ROLES) - set(MODULES)) == [], "ROLES names a module that is gone"


def test_no_import_cycle_among_groups_modules():
    assert cycles(GRAPH) == []


def test_group_types_depend_on_shared_modules_not_on_siblings():
    assert layer_offenders(GRAPH, ROLES) == []


def test_group_types_call_no_sibling_type_through_the_front():
    assert sibling_calls(MODULES, ROLES) == []


def test_share_groups_use_only_shared_modules_of_broker_groups():
    used = set()
    for tree in _modules(SHARE_PACKAGE).values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
                used.add(_submodule(node.module, PACKAGE))
    assert sorted(m for m in used if ROLES.get(m) != SHARED) == []


def test_no_underscore_name_crosses_groups_modules():
    assert private_crossings(MODULES, PACKAGE) == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The rules above on a package built to break each of them."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    files = {
        "shared": "def _helper(): pass\n",
        "a_type": "import p.shared as sh\nfrom p.shared import _helper\nfrom p import b_type\n"
                  "class A:\n    def run(self):\n        sh._helper()\n        return self._b_hook()\n",
        "b_type": "class B:\n    def _b_hook(self): pass\n    def f(self):\n        from p.a_type import A\n",
    }
    for name, src in files.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(src))
    modules = _modules(pkg)
    graph = import_graph(modules, "p")
    assert cycles(graph) == [["a_type", "b_type"]]
    assert layer_offenders(graph, {"shared": SHARED, "a_type": "a", "b_type": "b"}) == [
        "a module a_type imports sibling group type b's b_type", "b module b_type imports sibling group type a's a_type"]
    assert sibling_calls(modules, {"shared": SHARED, "a_type": "a", "b_type": "b"}) == [
        "a module a_type calls self._b_hook of group type b"]
    crossings = private_crossings(modules, "p")
    assert [c.split(" (")[0] for c in crossings] == [
        "a_type imports p.shared._helper", "a_type uses self._b_hook of b_type", "a_type uses shared._helper"]
