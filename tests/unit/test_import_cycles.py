"""No module of ours imports, at load time, a module that imports it back: every room can be
read (and loaded) on its own. Imports under ``if TYPE_CHECKING`` are for the type checker
alone and do not count; nor do imports inside functions, which this test cannot tell from
one made to dodge a cycle, so ``noqa: PLC0415`` marks the few that load something only when
asked (an OTLP exporter)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for pattern in ("libs/*/src", "services/*/src", "cli/src") for p in ROOT.glob(pattern)]


def _module_of(path: Path, source: Path) -> str:
    parts = list(path.relative_to(source).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _load_time_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Modules imported by the module's own body (not in functions, not for type checking)."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]:
            if isinstance(inner, ast.Import):
                found |= {alias.name for alias in inner.names}
            elif isinstance(inner, ast.ImportFrom):
                base = inner.module or ""
                if inner.level:
                    anchor = package.rsplit(".", inner.level - 1)[0] if inner.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                found.add(base)
                found |= {f"{base}.{alias.name}" for alias in inner.names}
    return found


def test_no_module_of_ours_imports_one_that_imports_it_back() -> None:
    graph: dict[str, set[str]] = {}
    for source in SOURCES:
        for path in source.rglob("*.py"):
            module = _module_of(path, source)
            tree = ast.parse(path.read_text())
            graph[module] = _load_time_imports(tree, module, path.name == "__init__.py")
    edges = {m: {i for i in imports if i in graph and i != m} for m, imports in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)
