"""How reports count and compare (:mod:`regsurvey.model.words`): a count with its noun in the right number,
and one arrow between a before and an after wherever a person reads one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from regsurvey.model.words import ARROW, ASCII_ARROW, agree, count, count_plural, listing, plural

PACKAGE = Path(__file__).resolve().parents[2] / "regsurvey"


@pytest.mark.parametrize(("n", "noun", "said"), [
    (1, "key", "1 key"), (0, "key", "0 keys"), (2, "key", "2 keys"),
    (1, "spill store", "1 spill store"), (52, "spill store", "52 spill stores"),
    (1, "launch", "1 launch"), (9, "launch", "9 launches"), (3, "entry", "3 entries"), (2, "day", "2 days"),
    (2, "VGPR", "2 VGPRs"), (2, "axis", "2 axes"), (2, "more changed build", "2 more changed builds"),
    (1.0, "idle minute", "1 idle minute"), (0.05, "idle minute", "0.05 idle minutes"),
    (30.0, "idle minute", "30 idle minutes"),
])
def test_a_count_takes_the_number_of_its_noun(n: float, noun: str, said: str) -> None:
    assert count(n, noun) == said


def test_a_word_agrees_with_its_count() -> None:
    assert [agree(n, "is") for n in (0, 1, 2)] == ["are", "is", "are"]
    assert [agree(n, "fails", "fail") for n in (1, 2)] == ["fails", "fail"]
    assert [agree(n, "it", "them") for n in (1, 3)] == ["it", "them"]
    assert plural("build") == "builds" and plural("miscompile suspect") == "miscompile suspects"


def test_a_noun_the_figure_registry_gives_in_the_plural() -> None:
    assert [count_plural(n, "spill stores") for n in (1, 2)] == ["1 spill store", "2 spill stores"]
    assert count_plural(1, "VGPR spills") == "1 VGPR spill" and count_plural(1, "LDS") == "1 LDS"


def test_a_listing_joins_with_and() -> None:
    assert [listing(items) for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of ``path`` that is not a docstring (f-strings' literal parts included)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_one_arrow_everywhere() -> None:
    """Every report draws ``→`` between a before and an after (the terminal's, Markdown's, HTML's, SARIF's);
    the ASCII ``->`` is the JSON reports' alone, spelled once, in :mod:`regsurvey.model.words`."""
    assert (ARROW, ASCII_ARROW) == ("→", "->")
    ascii_arrows = [f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}"
                    for path in sorted(PACKAGE.rglob("*.py")) if path.name != "words.py"
                    for line, text in _strings(path) if "->" in text]
    assert ascii_arrows == []
    template = (PACKAGE / "templates" / "report.html.j2").read_text()
    assert "->" not in template.replace("<!--", "").replace("-->", "")
