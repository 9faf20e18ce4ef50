"""The engine's modules stand at heights: no two import each other, however indirectly (imports inside
functions count: a lazy import is still an arrow), no private name crosses a module, and the scheduler knows
no transport (issue 34, item 1). Checked on the source, as tests/test_import_contract.py checks the packages."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "regsurvey" / "engine"


def _engine_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, engine module, names) of every import of an engine module in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        names = [a.name for a in node.names]
        if node.level == 1 and node.module:
            found.append((node.lineno, node.module.split(".")[0], names))
        elif node.level == 1:  # from . import x
            found += [(node.lineno, name, []) for name in names]
        elif node.module and node.module.startswith("regsurvey.engine."):
            found.append((node.lineno, node.module.split(".")[2], names))
    return found


def _graph() -> dict[str, set[str]]:
    return {p.stem: {m for _, m, _ in _engine_imports(p)} for p in ENGINE.glob("*.py")}


def test_no_engine_module_imports_another_that_imports_it() -> None:
    graph = _graph()
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target in graph:
                visit(target, path + [target])

    for module in sorted(graph):
        visit(module, [module])
    assert cycles == []


def test_no_private_name_crosses_an_engine_module() -> None:
    crossing = [f"{p.name}:{line} imports {name} from .{module}" for p in sorted(ENGINE.glob("*.py"))
                for line, module, names in _engine_imports(p) for name in [module, *names] if name.startswith("_")]
    assert crossing == []


def test_the_scheduler_knows_no_transport() -> None:
    """schedule.py imports nothing but the model, the protocol and the copies: no ray, no process, no pipe."""
    tree = ast.parse((ENGINE / "schedule.py").read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert imported <= {"__future__", "time", "collections", "collections.abc", "dataclasses", "typing",
                        "model.keys", "model.progress", "model.results", "model.targets", "protocol", "copies"}
