"""The documentation a newcomer walks: README.md and docs/*.md.

Every ``regsurvey ...`` shell example parses against the CLI (the command and subcommand exist, every
option is one of that command's, a choice is one it offers, no more positional arguments than it takes),
read with click's own parser from the ``regsurvey`` group: nothing runs. The schema versions the docs
state are the code's constants. Every relative link resolves to a file and, with a ``#fragment``, to a
heading of it; README links to every page of docs/ and each page back to README.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, fields
from pathlib import Path

import click
import pytest

from regsurvey.cli import main
from regsurvey.diff.core import compare
from regsurvey.model.comparison import DIFF_SCHEMA_VERSION, Mark, ToolchainChange
from regsurvey.model.figures import AMD_RESOURCES, NVIDIA_RESOURCES
from regsurvey.model.no_effect import KnobKind, NoEffect
from regsurvey.model.pressure import PRESSURE_VERSION
from regsurvey.model.results import READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, Row, SaidOnce, Survey
from regsurvey.model.where import HotLine
from regsurvey.output.diff_json import comparison_dict

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
DOCS = [README, ROOT / "ARCHITECTURE.md", *PAGES]

SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language (``""`` when untagged), text and first line in its file."""

    language: str
    text: str
    line: int


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.group(1), opening.group(2)
        end = i + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        found.append(Block(language, "\n".join(lines[i + 1:end]), i + 2))
        i = end + 1
    return found


def prose(text: str) -> str:
    """The text outside fenced code blocks (each block's lines blanked, so line numbers hold)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            out.append("")
        elif fence is not None:
            if line.startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def shell_lines(block: Block) -> list[tuple[int, str]]:
    """The command lines of a shell block, continuations joined: every line of a ``sh``/``bash`` block;
    in a ``console`` block, or any other, only the lines after a ``$ `` prompt."""
    prompted = block.language not in {"sh", "bash", "shell"}
    commands: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, line in enumerate(block.text.splitlines()):
        if pending is not None:
            start, text = pending
            text += " " + line.strip()
        elif prompted and not line.startswith("$ "):
            continue
        else:
            start, text = block.line + offset, line[2:] if prompted else line
        if text.endswith("\\"):
            pending = (start, text[:-1])
            continue
        pending = None
        commands.append((start, text))
    return commands


def invocations(line: str) -> list[list[str]]:
    """The argument lists of each ``regsurvey`` run on a shell line (after ``&&``, ``;``, pipes; without
    variable assignments before it and redirections after it)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    words = list(lexer)
    runs: list[list[str]] = []
    command: list[str] = []
    for word in [*words, ";"]:
        if word and set(word) <= set(";&|"):
            while command and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", command[0]):
                command = command[1:]
            if command and Path(command[0]).name == "regsurvey":
                runs.append(_without_redirections(command[1:]))
            command = []
        else:
            command.append(word)
    return runs


def _without_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for i, word in enumerate(words):
        redirects = i + 1 < len(words) and set(words[i + 1]) <= set("<>")
        if skip:
            skip = False
        elif set(word) <= set("<>"):
            skip = True
        elif not (word.isdigit() and redirects):  # the 2 of `2> FILE`
            kept.append(word)
    return kept


def cli_problem(args: list[str], group: click.Group = main) -> str | None:
    """Why ``regsurvey ARGS`` would not parse (None when it would): read by click's own parser for each
    (sub)command in turn, so an option renamed in the code makes the example wrong. Nothing is invoked."""
    command: click.Command = group
    # Contexts made as click makes them (a command's context_settings applied): a bare click.Context has
    # other help option names, and click keeps the help option a command first made for its next uses.
    ctx = click.Context(group, info_name="regsurvey", **group.context_settings)
    path = "regsurvey"
    while True:
        try:
            options, rest, order = command.make_parser(ctx).parse_args(list(args))
        except click.UsageError as error:
            return f"{path}: {error.format_message()}"
        for param in order:
            if isinstance(param.type, click.Choice):
                given = options[param.name]
                for value in given if isinstance(given, (list, tuple)) else [given]:
                    if not _chosen(param.type, value):
                        choices = ", ".join(map(str, param.type.choices))
                        return f"{path}: {value!r} is no choice of {param.opts[-1]} ({choices})"
        if not isinstance(command, click.Group):
            # The parser gave the command's arguments theirs: what is left over, click refuses.
            return f"{path} takes no more arguments: {rest}" if rest else None
        if not rest:
            return None  # `regsurvey --help`, `regsurvey --version`
        name, args = rest[0], rest[1:]
        sub = command.get_command(ctx, name)
        if sub is None:
            return f"{path} has no command {name!r}"
        path += f" {name}"
        ctx = click.Context(sub, info_name=name, parent=ctx, **sub.context_settings)
        command = sub


def _chosen(choice: click.Choice, value: object) -> bool:
    if not isinstance(value, str):
        return True
    names = [str(c) for c in choice.choices]
    return value in names or (not choice.case_sensitive and value.lower() in [n.lower() for n in names])


def examples() -> list[tuple[str, list[str]]]:
    """Every ``regsurvey`` run that the docs' shell examples show: (``file:line``, its arguments)."""
    found = []
    for doc in DOCS:
        for block in blocks(doc.read_text()):
            if block.language and block.language not in SHELL_LANGUAGES:
                continue
            for line_number, line in shell_lines(block):
                for args in invocations(line):
                    found.append((f"{doc.relative_to(ROOT)}:{line_number}", args))
    return found


EXAMPLES = examples()


def test_the_docs_show_an_example_of_every_command() -> None:
    shown = {args[0] for _, args in EXAMPLES if args}
    ctx = click.Context(main)
    assert set(main.list_commands(ctx)) <= shown


@pytest.mark.parametrize(("where", "args"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_each_shell_example_parses_against_the_cli(where: str, args: list[str]) -> None:
    assert cli_problem(args) is None, f"{where}: regsurvey {shlex.join(args)}"


@pytest.mark.parametrize(("line", "problem"), [
    ("regsurvey run --comit HEAD", "No such option"),
    ("regsurvey diff main HEAD --format pdf", "no choice"),
    ("regsurvey servr stop", "no command"),
    ("regsurvey server stop --idle 5", "No such option"),
    ("regsurvey explain a b", "no more arguments"),
    ("regsurvey run --commit", "requires an argument"),
])
def test_a_wrong_example_is_caught(line: str, problem: str) -> None:
    (args,) = invocations(line)
    assert problem in (cli_problem(args) or "")


def test_shell_lines_are_read_as_a_shell_reads_them() -> None:
    block = Block("console", "$ regsurvey run \\\n    --commit HEAD -j2  # two\noutput\n$ ls", 1)
    assert [invocations(line) for _, line in shell_lines(block)] == [[["run", "--commit", "HEAD", "-j2"]], []]
    assert invocations("cd x && CI=1 regsurvey check --base 'origin/main' > r.md 2> e.txt | tee") == [
        ["check", "--base", "origin/main"]]
    sh = Block("sh", "pip install -e . && regsurvey demo   # under a minute\nregsurvey lint a.hsaco", 1)
    assert [invocations(line) for _, line in shell_lines(sh)] == [[["demo"]], [["lint", "a.hsaco"]]]


def test_the_schema_versions_the_docs_state_are_the_codes() -> None:
    text = "\n".join(doc.read_text() for doc in DOCS)
    stated = {
        "survey": re.findall(r"survey JSON \(schema version (\d+)\)", text),
        "comparison": re.findall(r"comparison JSON \(schema version (\d+)\)", text),
        "pressure": re.findall(r"pressure\s+version (\d+)", text),
    }
    assert stated["survey"] and {int(v) for v in stated["survey"]} == {SCHEMA_VERSION}
    assert stated["comparison"] and {int(v) for v in stated["comparison"]} == {DIFF_SCHEMA_VERSION}
    assert stated["pressure"] and {int(v) for v in stated["pressure"]} == {PRESSURE_VERSION}
    # "`schema_version` 4 surveys are written; versions 1 to 3 ... are still read"
    ((written, oldest, newest),) = re.findall(r"`schema_version` (\d+) surveys are written; versions\s+(\d+) to (\d+)",
                                              text)
    assert int(written) == SCHEMA_VERSION
    assert (*range(int(oldest), int(newest) + 1), SCHEMA_VERSION) == READABLE_SCHEMA_VERSIONS
    # "new in schema version N": never a version the code does not write yet.
    assert all(int(v) <= SCHEMA_VERSION for v in re.findall(r"schema version (\d+)", text))
    # The JSON examples: a survey's, a comparison's, a stack's.
    examples = [b.text for doc in DOCS for b in blocks(doc.read_text()) if b.language == "json"]
    surveys = [b for b in examples if '"rows"' in b and '"report"' not in b]
    comparisons = [b for b in examples if '"report": "comparison"' in b]
    assert surveys and comparisons
    for example, version in [*((b, SCHEMA_VERSION) for b in surveys), *((b, DIFF_SCHEMA_VERSION) for b in comparisons)]:
        assert re.findall(r'"schema_version": (\d+)', example) == [str(version)]
    stack = re.findall(r'\{"schema_version": (\d+), "report":\s+"stack"', text)
    assert stack and {int(v) for v in stack} == {DIFF_SCHEMA_VERSION}


def test_regsurvey_is_installed_from_a_clone_with_declared_extras() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    text = "\n".join(doc.read_text() for doc in DOCS)
    # regsurvey is on no package index: `pip install 'regsurvey[ray]'` fails from a clone.
    assert not re.search(r"pip install[^\n`]*\bregsurvey\[", text)
    extras = re.findall(r"pip install[^\n`]*-e\s+['\"]?\.\[([\w,]+)\]", text)
    assert extras and {extra for group in extras for extra in group.split(",")} <= declared


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated one numbered as GitHub does)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(path.read_text()).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(path: Path) -> list[tuple[int, str]]:
    """The link targets of a Markdown file's prose (not those in code), with their line numbers."""
    found = []
    for number, line in enumerate(prose(path.read_text()).splitlines(), 1):
        line = re.sub(r"(`+)(.+?)\1", "", line)  # inline code
        found += [(number, target) for target in LINK.findall(line)]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for number, target in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:
        file, _, fragment = target.partition("#")
        resolved = (doc.parent / file).resolve() if file else doc
        if not resolved.exists():
            broken.append(f"{doc.name}:{number}: {target} (no such file)")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{doc.name}:{number}: {target} (no such heading in {resolved.name})")
    assert not broken


def test_readme_and_the_pages_link_both_ways() -> None:
    def targets(doc: Path) -> set[Path]:
        return {(doc.parent / t.partition("#")[0]).resolve() for _, t in links(doc) if t.partition("#")[0]}

    assert PAGES
    assert set(PAGES) <= targets(README)
    for page in PAGES:
        assert README in targets(page), page.name


def test_anchors_are_githubs() -> None:
    assert slug("Keys: the `keys/` directory") == "keys-the-keys-directory"
    assert slug("Comparing commits: `diff`, `stack`, `rebuild-check`") == "comparing-commits-diff-stack-rebuild-check"
    assert slug("A shared store or results directory: who may write it, and what a writer can make regsurvey "
                "believe") == ("a-shared-store-or-results-directory-who-may-write-it-and-what-a-writer-can-make-"
                               "regsurvey-believe")


def json_keys(example: str) -> dict[tuple[str, ...], set[str]]:
    """The keys of a JSON example that may hold ``...`` for what it leaves out, per object, by the path of
    keys that leads to it (lists are transparent: ``("rows",)`` holds each row's keys)."""
    found: dict[tuple[str, ...], set[str]] = {}
    frames: list[tuple[str, str | None]] = []  # each open container, and the key it is the value of
    key: str | None = None  # the key whose value comes next
    i = 0
    while i < len(example):
        char = example[i]
        if char == '"':
            end = i + 1
            while example[end] != '"':
                end += 2 if example[end] == "\\" else 1
            if example[end + 1:].lstrip().startswith(":"):
                key = example[i + 1:end]
                found.setdefault(tuple(name for _, name in frames if name is not None), set()).add(key)
            i = end
        elif char in "{[":
            frames.append((char, key if frames and frames[-1][0] == "{" else None))
            key = None
        elif char in "}]":
            frames.pop()
            key = None
        elif char == ",":
            key = None
        i += 1
    return found


def _surveys() -> tuple[Survey, Survey]:
    """Two one-build surveys of sm90 whose build the head made with more warps and registers."""
    def survey(commit: str, regs: int, warps: int) -> Survey:
        resources = dict.fromkeys(NVIDIA_RESOURCES, 0) | {"regs": regs}
        row = Row(key="gemm/w2", kind="gemm", axes={"width": 2}, target="sm90", kernel="matmul", status="ok",
                  resources=resources, num_warps=warps, lint=())
        return Survey(commit=commit, label=commit[:10], targets=("sm90",), toolchain={}, rows=(row,),
                      said_once=(SaidOnce("gemm", "sm90", "INFO once"),))
    return survey("a" * 40, 38, 4), survey("b" * 40, 68, 8)


def json_examples(heading: str) -> list[dict[tuple[str, ...], set[str]]]:
    """The keys of the JSON examples of the schemas page's section named ``heading``."""
    text = (ROOT / "docs" / "schemas.md").read_text()
    section = text.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]
    return [json_keys(b.text) for b in blocks(section) if b.language == "json"]


def test_the_survey_json_example_names_every_field_the_code_writes() -> None:
    (example,) = json_examples("The survey JSON")
    survey, _ = _surveys()
    written = json.loads(survey.to_json(no_effect=()))  # as `run --format json` writes it
    assert example[()] == set(written) == set(json.loads(survey.to_json())) | {"no_effect"}
    fact = NoEffect("l2norm", "gfx950", "NB", KnobKind.CONSTEXPR, (1, 2), ("k",), 2, ("rows",))
    assert example[("no_effect",)] == set(fact.to_dict())
    # config_source: written on fix's variant builds only (never on a survey's rows).
    assert example[("rows",)] == set(written["rows"][0]) == {f.name for f in fields(Row)} - {"config_source"}
    assert example[("rows", "object")] == {"path", "sha256"}
    assert example[("rows", "resources")] == set(AMD_RESOURCES)  # the example's row is a gfx950 build
    assert example[("said_once",)] == set(written["said_once"][0])


def test_the_comparison_json_example_names_every_field_the_code_writes() -> None:
    (example,) = json_examples("The comparison JSON")
    written = comparison_dict(compare(*_surveys()))
    row = written["rows"][0]
    assert example[()] == set(written)
    assert example[("base",)] == set(written["base"])
    assert example[("counts",)] == set(written["counts"]) == {m.value for m in Mark}
    assert example[("totals",)] == set(written["totals"])
    assert example[("totals", "lint")] == set(written["totals"]["lint"])
    assert example[("summary",)] == set(written["summary"][0])
    assert example[("rows",)] == set(row)
    assert example[("rows", "figures")] == set(row["figures"][0])
    assert example[("rows", "build_changes")] == set(row["build_changes"][0])
    assert example[("rows", "hot_lines")] == set(row["hot_lines"])
    assert example[("rows", "hot_lines", "before")] == {f.name for f in fields(HotLine)}
    assert example[("toolchain_changes",)] == {f.name for f in fields(ToolchainChange)}
    fact = NoEffect("l2norm", "gfx950", "NB", KnobKind.CONSTEXPR, (1, 2), ("k",), 2, ("rows",))
    assert example[("no_effect",)] == set(fact.to_dict()) | {"new", "text"}


def test_json_keys_reads_examples_with_gaps() -> None:
    keys = json_keys('{"a": 1, "b": {"c": [1, 2], ...}, "rows": [{"d": "x: y", "e": {...}}, ...], "f": null}')
    assert keys == {(): {"a", "b", "rows", "f"}, ("b",): {"c"}, ("rows",): {"d", "e"}}


def test_the_csv_columns_the_docs_state_are_the_codes() -> None:
    """docs/schemas.md's table of CSV columns, read back: each result's fixed columns are the module's,
    in its order, and the figure list is the registry's."""
    from regsurvey.output import csv_format

    text = (ROOT / "docs" / "schemas.md").read_text()
    section = text[text.index("## The CSV tables"):]
    figures = re.search(r"in its order: (.*?)\): a figure", section, re.S)
    assert figures, "no figure list in the CSV section"
    assert re.findall(r"`(\w+)`", figures.group(1)) == list(csv_format.FIGURE_NAMES)
    stated = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith(("survey", "comparison", "stack", "history", "lint", "rebuild")):
            # The fixed columns are the names before "then" (the figures' columns), or all of them.
            fixed = cells[2].split(", then ")[0]
            stated[cells[0].split(" (")[0]] = re.findall(r"`(\w+)`", fixed)
    built = lambda columns: [c for c in columns if c not in csv_format.FIGURE_NAMES  # noqa: E731
                             and not re.match(rf"({'|'.join(csv_format.FIGURE_NAMES)})_(before|after)$", c)]
    assert stated == {
        "survey": built(csv_format.SURVEY_COLUMNS),
        "comparison": built(csv_format.COMPARISON_COLUMNS),
        "stack": ["commit", "subject"],
        "history": list(csv_format.HISTORY_COLUMNS),
        "history across toolchains": list(csv_format.TOOLCHAIN_HISTORY_COLUMNS),
        "lint findings": list(csv_format.LINT_COLUMNS),
        "rebuild check": list(csv_format.REBUILD_COLUMNS),
    }
    assert csv_format.STACK_COLUMNS == ("commit", "subject", *csv_format.COMPARISON_COLUMNS)


def test_the_prune_table_json_example_names_every_field_the_code_writes() -> None:
    from regsurvey.model.prune import PRUNE_SCHEMA_VERSION, PrunedBuild, PrunedConfig, PruneTable, Reason

    (example,) = json_examples("The prune table JSON")
    build = PrunedBuild(key="gemm/w2", figures={"regs": 255}, compile_s=1.0, spill_bytes=96)
    config = PrunedConfig(kernel="matmul", num_warps=8, num_stages=3, constexprs={"BLOCK": 64}, reason=Reason.SPILLS,
                          builds=(build,), config=0)
    written = json.loads(PruneTable(commit=None, label="x", toolchain={}, spill_above=64,
                                    configs={"sm90": (config,)}).to_json())
    assert example[()] == set(written)
    assert example[("targets", "gfx950")] == set(written["targets"]["sm90"][0])
    assert example[("targets", "gfx950", "builds")] == set(written["targets"]["sm90"][0]["builds"][0])
    text = "\n".join(doc.read_text() for doc in DOCS)
    stated = re.findall(r"prune table JSON \(schema version (\d+)\)", text)
    assert stated and {int(v) for v in stated} == {PRUNE_SCHEMA_VERSION}
    (block,) = [b.text for b in blocks((ROOT / "docs" / "schemas.md").read_text()) if '"prune-table"' in b.text]
    assert re.findall(r'"schema_version": (\d+)', block) == [str(PRUNE_SCHEMA_VERSION)]
