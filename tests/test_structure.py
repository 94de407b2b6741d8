"""The organisation of ``src/arenaplan`` itself: who may import whom.

This checker reads the source with ``ast`` and shares no code with the package
beyond the name of the built-in runtimes' modules (``runtime.registry.BUILT_IN``).
An import inside ``if TYPE_CHECKING:`` is an annotation, not a dependency, and is
not counted; every other import is, at the top of a file or inside a function.

- No file outside a runtime package imports one: the planner reaches a runtime
  through ``arenaplan.runtime`` (the interface and the registry) only.
- Imports follow one order of packages (``LAYERS``, lowest first): nothing imports a
  package of a higher layer.
- No cycle: no two files import each other, directly or through others.
- A function-level import of our own packages says why (a comment on its line or
  the line above), and there are few of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from arenaplan.runtime.registry import BUILT_IN

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "arenaplan"

# Lowest first. A package may import its own layer's and any lower layer's modules.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "units", "inputs", "signals", "__init__", "firmware"),  # firmware: C++ data
    ("ir", "allocation"),
    ("reader", "runtime"),
    ("targets", "analysis"),
    ("cost",),
    ("passes",),
    ("placement",),
    ("weights",),
    ("export",),
    ("builder",),
    ("tflm", "executorch"),  # runtime packages: nothing above imports them (by name)
    ("pipeline",),
    ("explore",),
    ("commands",),
    ("cli",),
    ("__main__",),
)
RUNTIME_PACKAGES = frozenset(module.split(".")[1] for module in BUILT_IN.values())
MAX_FUNCTION_IMPORTS = 5  # of our own modules (start-up only), each with its reason


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# compiled extensions (the allocator's C): leaves, imported by name
EXTENSIONS = {
    _module_name(p.with_name(p.name.split(".")[0] + ".py")) for p in PACKAGE.rglob("*.so")
}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """(import node, whether it is inside a function), TYPE_CHECKING blocks skipped."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from _imports(ast.Module(body=node.orelse, type_ignores=[]), in_function)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
            continue
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        yield from _imports(node, inner)


def _targets(module: str, node: ast.AST) -> list[str]:
    """The modules of ours ``node`` (in ``module``) imports."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        base = node.module or ""
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        names = [
            f"{base}.{a.name}" if f"{base}.{a.name}" in {*MODULES, *EXTENSIONS} else base
            for a in node.names
        ]
    found = []
    for name in names:
        if name in EXTENSIONS:
            continue
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("arenaplan"):
            found.append(name)
    return found


def _graph() -> tuple[dict[str, set[str]], list[tuple[str, str, int, bool]]]:
    """module -> modules it imports; and every (module, target, line, in a function)."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    each = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for node, in_function in _imports(tree):
            for target in _targets(module, node):
                if target != module:
                    edges[module].add(target)
                    each.append((module, target, node.lineno, in_function))
    return edges, each


EDGES, EACH = _graph()


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _layer(package: str) -> int:
    for k, names in enumerate(LAYERS):
        if package in names:
            return k
    raise AssertionError(f"package {package!r} is in no layer of tests/test_structure.py")


def _where(module: str) -> str:
    return str(MODULES[module].relative_to(SRC.parent))


def test_every_package_has_a_layer() -> None:
    for module in MODULES:
        _layer(_package(module))


def test_no_file_outside_a_runtime_package_imports_one() -> None:
    found = [
        f"{_where(m)}:{line} imports {t}"
        for m, t, line, _ in EACH
        if _package(t) in RUNTIME_PACKAGES and _package(m) != _package(t)
    ]
    assert not found, "\n".join(found)


def test_no_import_runs_up_the_layers() -> None:
    found = [
        f"{_where(m)}:{line} ({_package(m)}) imports {t} ({_package(t)}), a higher layer"
        for m, t, line, _ in EACH
        if _layer(_package(t)) > _layer(_package(m))
    ]
    assert not found, "\n".join(found)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            child = next(it, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_two_files_import_each_other() -> None:
    found = _cycles(EDGES)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The checker itself: a made-up graph with one cycle of three and one without."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def _reason(path: Path, line: int) -> bool:
    lines = path.read_text().splitlines()
    here, above = lines[line - 1], lines[line - 2].strip() if line > 1 else ""
    return "#" in here or above.startswith("#")


def test_function_level_imports_of_our_own_say_why_and_are_few() -> None:
    inner = [(m, t, line) for m, t, line, in_function in EACH if in_function]
    silent = [
        f"{_where(m)}:{line} imports {t}" for m, t, line in inner if not _reason(MODULES[m], line)
    ]
    assert not silent, "function-level imports without a reason:\n" + "\n".join(silent)
    assert len(inner) <= MAX_FUNCTION_IMPORTS, len(inner)


@pytest.mark.parametrize("package", sorted(RUNTIME_PACKAGES))
def test_a_runtime_package_holds_its_runtime(package: str) -> None:
    modules = [m for m in BUILT_IN.values() if _package(m) == package]
    assert modules and all(m in MODULES for m in modules)
