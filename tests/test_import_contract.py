"""The import contract: every package and top-level module of regsurvey stands at one height.

The layers, lowest first (each imports only from the layers below it; ``ALLOWED`` names from which):

0. ``model``, ``errors``, ``processes``, ``secret_vars``, ``source_names``: import nothing of regsurvey's;
1. ``keys`` (the keys API and the capture session kind bodies run in), ``objects`` (the object readers),
   ``store``, ``diff`` and ``check`` (comparing, gating): over the model;
2. ``compile`` (the only module touching Triton), ``lint`` and ``pressure`` (pure: an object's bytes and
   texts in, findings or register pressure out), ``repo`` (the surveyed repository: checkouts, source
   files), ``output`` (presentation only: the model, ``diff``, ``check``), ``__init__`` (``rs.*``);
3. ``capture`` (a program's launches recorded and replayed), ``analysis`` (one object read and linted),
   ``kept_pressure`` (a build's pressure, kept beside its object);
4. ``replay`` (the path generated keys files import), ``linting``, ``where`` (where a comparison's
   builds moved, on the diff side), ``first_stage`` (the first compiler stage whose output differs);
5. ``engine`` (the survey);
6. ``revisions`` (surveys of revisions: stored or new, ranges, bisection, rebuilds, the demo);
7. ``commands``; 8. ``cli`` (nothing else imports ``commands``); 9. ``__main__``.

Checked on the source: every ``import``/``from`` statement, those inside functions and under ``if
TYPE_CHECKING:`` too (a lazy import is still an arrow), so that a violation fails here and in CI, not in
review. A package or module without an entry fails, and so does any cycle, named edge by edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "regsurvey"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("model", "errors", "processes", "secret_vars", "source_names"),
    ("keys", "objects", "store", "diff", "check"),
    ("compile", "lint", "pressure", "repo", "output", "tuning", "__init__"),
    ("capture", "analysis", "kept_pressure"),
    ("replay", "coverage", "linting", "where", "first_stage"),
    ("engine",),
    ("revisions",),
    ("commands",),
    ("cli",),
    ("__main__",),
)

# Package or top-level module -> the regsurvey packages and modules it may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "errors": set(),
    "processes": set(),
    "secret_vars": set(),  # standard library only: ci/ loads it by path
    "source_names": set(),
    "keys": {"model", "source_names"},
    "objects": {"model", "errors"},
    "store": {"model", "errors"},
    "diff": {"model"},
    "check": {"model", "source_names"},
    "compile": {"model", "keys", "objects"},
    "lint": {"model", "errors", "objects"},
    "pressure": {"model", "errors", "objects"},
    "repo": {"model", "errors", "processes", "store", "source_names"},
    "output": {"model", "diff", "check", "source_names"},
    "tuning": {"model", "keys"},  # the run-time helper: light, nothing of the compile side
    "__init__": {"model", "keys"},
    "capture": {"model", "keys", "compile"},
    "analysis": {"model", "objects", "compile", "lint"},
    "kept_pressure": {"model", "errors", "store", "pressure", "compile"},
    "replay": {"capture"},
    "coverage": {"model", "keys", "compile", "capture"},
    "linting": {"model", "errors", "objects", "store", "lint", "analysis", "compile"},
    "where": {"model", "errors", "store", "repo", "kept_pressure"},
    "first_stage": {"model", "errors", "store", "objects", "diff"},
    "engine": {"model", "errors", "processes", "secret_vars", "keys", "objects", "store", "repo", "compile",
               "analysis", "linting", "kept_pressure"},
    "revisions": {"model", "errors", "objects", "store", "diff", "repo", "compile", "__init__", "engine",
                  "tuning"},
    "commands": {"model", "errors", "secret_vars", "store", "diff", "check", "repo", "lint", "output", "capture",
                 "tuning", "coverage", "kept_pressure", "linting", "where", "first_stage", "engine", "revisions"},
    "cli": {"model", "commands"},
    "__main__": {"cli"},
}


def _entries(root: Path = PACKAGE) -> set[str]:
    """regsurvey's packages (a directory holding Python files) and top-level modules, by name."""
    return ({p.name for p in root.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
            | {p.stem for p in root.glob("*.py")})


def _imports(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, package or top-level module) of every regsurvey import in ``path`` (a file under ``root``, the
    ``regsurvey`` directory), at any depth of the module: in functions, under ``if TYPE_CHECKING:``. A name
    of the package itself (``import regsurvey``, ``from regsurvey import __version__``) is ``__init__``."""
    package = path.relative_to(root.parent).with_suffix("").parts[:-1]
    entries = _entries(root)
    found: list[tuple[int, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
            elif (node.module or "").split(".")[0] == root.name:
                base = ()
            else:
                continue
            target = base + tuple(node.module.split(".") if node.module else ())
            if len(target) == 1:  # from regsurvey import x, from .. import x: x may be a module
                found += [(node.lineno, target + (a.name,)) for a in node.names]
            else:
                found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, tuple(a.name.split("."))) for a in node.names if a.name.split(".")[0] == root.name]
    return [(line, parts[1] if len(parts) > 1 and parts[1] in entries else "__init__") for line, parts in found]


def _entry_files(entry: str, root: Path = PACKAGE) -> list[Path]:
    return sorted((root / entry).rglob("*.py")) if (root / entry).is_dir() else [root / f"{entry}.py"]


def _graph(root: Path = PACKAGE) -> dict[str, dict[str, list[str]]]:
    """Package or module -> each other one it imports -> where (``file:line`` of every such import)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for entry in sorted(_entries(root)):
        edges = graph.setdefault(entry, {})
        for path in _entry_files(entry, root):
            for line, target in _imports(path, root):
                if target != entry:
                    edges.setdefault(target, []).append(f"{path.relative_to(root.parent)}:{line}")
    return graph


def _cycles(graph: dict[str, dict[str, list[str]]]) -> list[str]:
    """Each cycle a depth-first walk closes (one per edge back into the walk), edge by edge with the
    imports that make it."""
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, {})):
            if state.get(target) == "open":
                loop = stack[stack.index(target):] + [target]
                found.append("; ".join(f"{a} -> {b} ({', '.join(graph[a][b])})" for a, b in zip(loop, loop[1:])))
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_every_package_and_module_has_an_entry() -> None:
    assert _entries() == set(ALLOWED) == {e for layer in LAYERS for e in layer}


@pytest.mark.parametrize("entry", sorted(ALLOWED))
def test_each_imports_only_what_it_may(entry: str) -> None:
    bad = [f"{where} imports regsurvey.{target}" for target, wheres in sorted(_graph()[entry].items())
           if target not in ALLOWED[entry] for where in wheres]
    assert bad == []


def test_what_each_may_import_is_below_it() -> None:
    height = {e: i for i, layer in enumerate(LAYERS) for e in layer}
    assert [f"{e} may import {t}" for e in sorted(ALLOWED) for t in sorted(ALLOWED[e])
            if height[t] >= height[e]] == []


def test_the_packages_import_one_another_in_no_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "packages importing one another in a cycle:\n" + "\n".join(cycles)


def test_only_the_command_line_may_import_the_commands() -> None:
    assert [e for e, allowed in ALLOWED.items() if "commands" in allowed] == ["cli"]


def test_the_checker_sees_every_form_of_import(tmp_path: Path) -> None:
    # A checker that finds nothing would pass everything: it must see each form, at any depth.
    root = tmp_path / "regsurvey"
    for entry in ("model", "diff", "store", "engine", "revisions", "keys"):
        (root / entry).mkdir(parents=True)
        (root / entry / "__init__.py").write_text("")
    (root / "errors.py").write_text("")
    (root / "diff" / "x.py").write_text(
        "from __future__ import annotations\n"            # 1
        "from typing import TYPE_CHECKING\n"               # 2
        "from ..model.keys import Key\n"                   # 3
        "from . import core\n"                             # 4
        "from .. import errors, __version__\n"             # 5
        "if TYPE_CHECKING:\n"                              # 6
        "    from ..store.objectstore import ObjectStore\n"  # 7
        "def f():\n"                                       # 8
        "    from ..engine import survey\n"                # 9
        "    import regsurvey.revisions.obtain\n"          # 10
        "    from regsurvey import keys\n"                 # 11
        "    import regsurvey\n")                          # 12
    assert sorted(_imports(root / "diff" / "x.py", root)) == [
        (3, "model"), (4, "diff"), (5, "__init__"), (5, "errors"), (7, "store"), (9, "engine"), (10, "revisions"),
        (11, "keys"), (12, "__init__")]
    # And the graph's cycles, with the imports that close them.
    (root / "engine" / "y.py").write_text("from ..diff import x\n")
    assert _cycles(_graph(root)) == ["diff -> engine (regsurvey/diff/x.py:9); engine -> diff (regsurvey/engine/y.py:1)"]
    # On the real source: a TYPE_CHECKING import (output/markdown.py's of check.gate) is seen.
    markdown = PACKAGE / "output" / "markdown.py"
    guarded = [n for n in ast.walk(ast.parse(markdown.read_text())) if isinstance(n, ast.If)
               and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    assert guarded and (guarded[0].body[0].lineno, "check") in _imports(markdown)


def test_a_long_module_says_why_it_is_long() -> None:
    # ~500 lines is where a module should split; one that does not says why in its docstring.
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 500 and "over 500 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(str(path.relative_to(PACKAGE.parent)))
    assert long == []


# Scripts CI never runs (they need the device's GPU or its 16 cores): the regsurvey names they import,
# those inside functions too, must still exist, or a refactor breaks them unseen until the device.
SCRIPTS = [*sorted((PACKAGE.parent / "benchmarks").glob("*.py")), PACKAGE.parent / "tests" / "gpu" / "fidelity.py"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_outside_ci_import_names_that_exist(script: Path) -> None:
    import importlib

    missing = []
    for node in ast.walk(ast.parse(script.read_text(), str(script))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "regsurvey":
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        missing.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "regsurvey":
                    importlib.import_module(alias.name)
    assert not missing, f"{script.name}: " + "; ".join(missing)


def test_the_gpu_checks_program_exists() -> None:
    """The capture step of the GPU fidelity check runs the demo kernels' checks as a real program."""
    from .gpu.fidelity import DEMO_PROGRAM

    assert DEMO_PROGRAM.is_file() and "--device" in DEMO_PROGRAM.read_text()
