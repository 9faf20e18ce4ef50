"""The import contract: presentation, comparison and the model depend downward only.

- ``model/`` imports nothing of regsurvey's outside itself;
- ``diff/`` and ``check/`` import only ``model/`` (and themselves);
- ``output/`` imports only ``model/``, ``diff/`` and ``check/`` (and itself);
- ``lint/`` is pure: object bytes and texts in, findings out (no store, survey, engine or output);
- ``objects/`` (the object readers) import only ``model/`` and ``errors``;
- ``pressure/`` is pure like ``lint/``: an object's bytes and texts in, its register pressure out;
- nothing imports ``commands/`` but the command line itself (``cli.py``).

Checked on the source (every ``import``/``from`` statement, those inside functions too), so that a
violation fails here and in CI, not in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "regsurvey"

# Layer -> the regsurvey modules or packages it may import besides itself.
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "diff": {"model"},
    "check": {"model"},
    "output": {"model", "diff", "check"},
    "lint": {"model", "errors", "objects"},
    "objects": {"model", "errors"},
    "pressure": {"model", "errors", "objects"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, first component under regsurvey) of every regsurvey import in ``path``."""
    module = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = module[:-1] if path.name != "__init__.py" else module[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1]) if node.level > 1 else list(package)
                target = base + (node.module.split(".") if node.module else [])
                if not node.module:
                    found += [(node.lineno, ".".join(target + [a.name])) for a in node.names]
                    continue
            elif node.module and node.module.split(".")[0] == "regsurvey":
                target = node.module.split(".")
            else:
                continue
            found.append((node.lineno, ".".join(target)))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "regsurvey"]
    out = []
    for line, name in found:
        parts = name.split(".")
        if parts[0] == "regsurvey" and len(parts) > 1:
            out.append((line, parts[1]))
        elif parts == ["regsurvey"]:
            out.append((line, "regsurvey"))
    return out


def _violations(layer: str) -> list[str]:
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, target in _imports(path):
            if target != layer and target not in ALLOWED[layer]:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports regsurvey.{target}")
    return bad


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_below_it(layer: str) -> None:
    assert _violations(layer) == []


def test_nothing_imports_the_commands_but_the_command_line() -> None:
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line}"
           for path in sorted(PACKAGE.rglob("*.py"))
           if "commands" not in path.relative_to(PACKAGE).parts[:1] and path.name not in ("cli.py", "__main__.py")
           for line, target in _imports(path) if target == "commands"]
    assert bad == []


def test_the_checker_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    # A checker that finds nothing would pass everything: it must see each form.
    source = PACKAGE / "output" / "table.py"
    assert ("model" in {t for _, t in _imports(source)})
    assert {t for _, t in _imports(PACKAGE / "cli.py")} >= {"commands"}


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
