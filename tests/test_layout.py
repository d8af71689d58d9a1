"""The house rules of the layout (DESIGN.md, "Layout"), checked on the source itself.

Three floors, arrows only pointing down: ``actors`` -> ``protocol`` -> ``assignors``. No two
modules import each other, at any depth of the file (function-level imports count too). The
pure floors never import Ray, read a clock or touch files.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "assignors", "actors")
FLOOR = {"actors": 2, "protocol": 1, "assignors": 0}
IMPURE = {"ray", "raydp", "pyspark", "time", "os", "pathlib", "socket", "asyncio", "threading"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every module named by an import anywhere in the file (a ``from pkg import mod`` that
    names a submodule counts as importing that submodule)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


GRAPH = {
    name: {i for i in _imports(path) if i in MODULES and i != name}
    for name, path in MODULES.items()
}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def test_no_two_modules_import_each_other():
    pairs = sorted(
        (a, b)
        for a, deps in GRAPH.items()
        for b in deps
        if a < b and a in GRAPH.get(b, set()) and not (_is_package(a) or _is_package(b))
    )
    assert pairs == []


def test_arrows_only_point_down():
    upward = sorted(
        (a, b)
        for a, deps in GRAPH.items()
        for b in deps
        if FLOOR[b.split(".")[0]] > FLOOR[a.split(".")[0]]
    )
    assert upward == []


def test_the_pure_floors_never_import_ray_a_clock_or_the_file_system():
    offenders = sorted(
        (name, i)
        for name, path in MODULES.items()
        if name.split(".")[0] in ("protocol", "assignors")
        for i in _imports(path)
        if i.split(".")[0] in IMPURE
    )
    assert offenders == []


def test_the_layout_check_sees_the_whole_house():
    assert {"protocol.shard", "protocol.api", "actors.cluster", "assignors.spec"} <= set(MODULES)
    assert "protocol.group_types" in GRAPH["protocol.shard"]
