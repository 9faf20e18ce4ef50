"""Every terminal table at 80, 120 and 200 columns, from real surveys: ``run``'s AMD and NVIDIA tables, the
``diff`` groups, the ``stack`` table, ``explain``'s tables (tests/width_surveys.py: keys named as long as a
serving engine's, a compile error and a ptxas error, what launchers say, a skipped key, three commits), and
the lint's findings (real findings on the lint's committed fixtures, tests/lint_surveys.py).

Each table is read back from the text as a reader of the terminal sees it, and must have: no line past
the width; every header whole at least to its first word (a column of width 0 has none); every row's key,
target and kernel, whole once its folds are joined; the figures the command is for, with the survey's own
values; and errors, skip reasons and what launchers said on lines of their own under their rows.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from rich.console import Console

from regsurvey.diff.core import compare, stack
from regsurvey.kept_pressure import pressure_of
from regsurvey.model.comparison import Comparison, Mark, RowComparison
from regsurvey.model.figures import AMD, NVIDIA, figure, vendor_figures
from regsurvey.model.findings import ERROR, Finding
from regsurvey.model.names import build_names
from regsurvey.model.results import Row, Survey
from regsurvey.model.targets import get_target
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.explain import Explained, format_text
from regsurvey.output.figure_text import build_text, change_text, launch_text, status_text
from regsurvey.output.findings import findings_table
from regsurvey.output.table import print_survey
from regsurvey.repo.sources import SourcePaths
from regsurvey.store.objectstore import ObjectStore

from ..lint_surveys import findings
from ..width_surveys import WidthSurveys, width_surveys

WIDTHS = (80, 120, 200)
INDENT = "    "  # the lines under a row


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> WidthSurveys:
    return width_surveys(tmp_path_factory.mktemp("widths"))


# ---- reading a table back --------------------------------------------------------------------------------


def flat(text: str) -> str:
    """``text`` with its blanks collapsed: a wrapped line joined again reads the same."""
    return " ".join(text.split())


@dataclass
class Record:
    """One row as the terminal shows it: its identifying cells (folds joined), its lines and, per line,
    the identifying cells' parts on it, and the lines under it (their indent taken off)."""

    cells: dict[str, str]
    lines: list[str] = field(default_factory=list)
    parts: list[list[str]] = field(default_factory=list)
    under: list[str] = field(default_factory=list)

    @property
    def said(self) -> str:
        """What the lines under the row say, joined."""
        return flat(" ".join(self.under))

    @property
    def text(self) -> str:
        """The row's own lines, joined (a text column wrapped over several reads as one)."""
        return flat(" ".join(self.lines))

    def after(self, start: int) -> list[str]:
        """What the row's first line holds past its last identifying cell (which starts at ``start``)."""
        parts = re.split(r" {2,}", self.lines[0][start:].rstrip(), maxsplit=1)
        return parts[1].split() if len(parts) > 1 else []


@dataclass
class Table:
    title: str
    header: list[str]
    starts: list[int]  # where each identifying column starts
    records: list[Record]
    after: list[str]  # the lines under the table (what was left out, captions, [Other])


def _parts(line: str, starts: list[int]) -> list[str]:
    """The identifying cells' parts on ``line``: left-justified at their columns' starts, the last one
    ending where two blanks do."""
    parts = [line[a:b].strip() for a, b in zip(starts, starts[1:])]
    rest = line[starts[-1]:]
    parts.append("" if rest[:1] in ("", " ") else re.split(r" {2,}", rest)[0].strip())
    return parts


def read_table(lines: list[str], names: Sequence[str], rows: int) -> Table:
    """The table whose title is ``lines[0]`` and whose ``rows`` rows follow its header; ``names`` are its
    identifying columns, left-justified under their headers, in order."""
    title, rest = lines[0], lines[1:]
    head_end = next(i for i, line in enumerate(rest) if line.startswith(names[0] + " ") or line == names[0])
    header = rest[:head_end + 1]
    starts, at = [], 0
    for name in names:
        at = header[-1].index(name, at)
        starts.append(at)
        at += len(name)
    assert starts[0] == 0 and all(start > len(INDENT) for start in starts[1:]), header
    records: list[Record] = []
    after: list[str] = []
    for line in rest[head_end + 1:]:
        last_done = len(records) == rows and (records[-1].under or len(names) == 1 or _parts(line, starts)[1])
        if after or (last_done and not line.startswith(" ")):  # past the last row and what it folds
            after.append(line)
        elif line.startswith(INDENT) and line[len(INDENT)] != " " and records:  # a line under the row
            records[-1].under.append(line[len(INDENT):])
        elif line[:1] != " " and (len(names) == 1 or _parts(line, starts)[1]):  # a row's first line
            parts = _parts(line, starts)
            records.append(Record(dict(zip(names, parts)), [line], [parts]))
        else:  # a row's next line: its names folded, or a text column wrapped
            record = records[-1]
            assert not record.under, f"a row's line after the lines under it: {line!r}"
            parts = _parts(line, starts)
            record.lines.append(line)
            record.parts.append(parts)
            for name, part in zip(names, parts):
                record.cells[name] += part
    assert len(records) == rows, (rows, [r.cells for r in records])
    return Table(title, header, starts, records, after)


def blocks(text: str) -> list[list[str]]:
    """The text's blocks: runs of lines between blank lines."""
    out: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [b for b in out if b]


def assert_fits(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, f"{len(long)} lines past {width} columns, the first: {long[0]!r}"


def assert_headers(table: Table, headers: Sequence[str], left_out: Sequence[str] = ()) -> None:
    """Each header stands in the header lines, at least its first word whole (a column of width 0 shows
    none); one of ``left_out`` may instead be named by the line saying what the width left out."""
    words = [word for line in table.header for word in line.split()]
    said = " ".join(table.after)
    for header in headers:
        first = header.split()[0]
        if header in left_out and first not in words:
            assert re.search(rf"left out to fit \d+ columns: .*\b{re.escape(header)}\b", said), (header, said)
            continue
        assert all(word in words for word in header.split()), (header, table.header)


def same(shown: str, name: str) -> bool:
    """A name as shown, folds joined, is the name (a fold at a blank drops it)."""
    return shown.replace(" ", "") == name.replace(" ", "")


# ---- run ---------------------------------------------------------------------------------------------------


def run_text(survey: Survey, width: int) -> str:
    """``regsurvey run``'s table on a terminal of ``width`` columns."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    print_survey(survey, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def vendor_rows(survey: Survey, vendor: str) -> list[Row]:
    return [r for r in survey.rows if get_target(r.target).is_amd == (vendor == AMD)]


@pytest.mark.parametrize("width", WIDTHS)
def test_run_tables_fit_and_keep_their_figures(served: WidthSurveys, width: int) -> None:
    survey = served.surveys[0]
    text = run_text(survey, width)
    assert_fits(text, width)
    names = build_names(survey.rows)
    tables = {b[0].split(" — ")[0]: b for b in blocks(text) if b[0].startswith(("AMD — ", "NVIDIA — "))}
    assert set(tables) == {AMD, NVIDIA}
    for vendor, lines in tables.items():
        rows = vendor_rows(survey, vendor)
        table = read_table(lines, ("key", "target", "kernel"), len(rows))
        figures = vendor_figures(vendor)
        # What may be left out at a narrow width: figures restating another, and kernel arguments.
        spare = [f.label for f in figures if f.companion_of is not None or f.worse == 0]
        assert_headers(table, ["key", "target", "kernel", *(f.label for f in figures)],
                       left_out=spare if width < 200 else ())
        header_words = [word for line in table.header for word in line.split()]
        shown = [f for f in figures if f.label.split()[0] in header_words]
        for row, record in zip(rows, table.records):
            kernel = names[(row.target, row.row_id)].text or "-"
            assert same(record.cells["key"], row.key) and record.cells["target"] == row.target, record
            assert same(record.cells["kernel"], kernel), record
            if row.ok:  # the row's figures, in their columns, the survey's own values
                values = record.after(table.starts[-1])
                assert values == [str(row.resources[f.name]) for f in shown], (record.lines[0], shown)
            else:  # a failed row: no figure, and its error (or skip reason) a line of its own under it
                assert all("".join(line.split()) == "".join(parts) for line, parts in zip(record.lines, record.parts))
                reason = (f"skipped: {row.skip_reason}" if row.skipped else f"error: {row.error_line}")
                assert record.said.startswith(flat(reason)), (record.said, reason)
            assert not any(word in line for line in record.lines for word in ("error:", "said:", "skipped:"))
        # What a key's body said: one line under the key's last row, cut to the width.
        for i, (row, record) in enumerate(zip(rows, table.records)):
            last = i + 1 == len(rows) or (rows[i + 1].key, rows[i + 1].target) != (row.key, row.target)
            said = [line for line in record.under if line.startswith("said: ")]
            if row.messages and last:
                (line,) = said
                first = flat(row.messages[0])
                assert line.startswith("said: " + first[:30]) and len(INDENT + line) <= width, line
                assert line.endswith(f"(+{len(row.messages) - 1} more)") or len(row.messages) == 1
            else:
                assert not said, record.under


def test_run_wide_enough_leaves_nothing_out_and_folds_nothing(served: WidthSurveys) -> None:
    text = run_text(served.surveys[0], 200)
    assert "left out to fit" not in text
    for vendor in (AMD, NVIDIA):
        lines = next(b for b in blocks(text) if b[0].startswith(f"{vendor} — "))
        table = read_table(lines, ("key", "target", "kernel"), len(vendor_rows(served.surveys[0], vendor)))
        assert all(len(record.lines) == 1 for record in table.records)
        assert len(table.header) == 1  # no header wrapped


def test_a_message_never_widens_a_figure_column(served: WidthSurveys) -> None:
    """What a launcher said (over 120 characters here) and the errors stay out of the first figure column
    (VGPR, regs): at every width it is as wide as its header or its widest value, no wider (one an error
    or a message widened was 85 characters wide)."""
    survey = served.surveys[0]
    assert max(len(m) for r in survey.rows for m in r.messages) > 120
    for width in WIDTHS:
        text = run_text(survey, width)
        for vendor, label in ((AMD, "VGPR"), (NVIDIA, "regs")):
            rows = vendor_rows(survey, vendor)
            lines = next(b for b in blocks(text) if b[0].startswith(f"{vendor} — "))
            table = read_table(lines, ("key", "target", "kernel"), len(rows))
            kernel = max(len(parts[2]) for record in table.records for parts in record.parts)
            start = table.starts[2] + max(kernel, len("kernel")) + 2  # the kernel column, then two blanks
            end = table.header[-1].index(f" {label}") + 1 + len(label)  # figures stand right-justified
            values = [str(r.resources[vendor_figures(vendor)[0].name]) for r in rows if r.ok]
            wide = max(len(label), *map(len, values))
            if all(len(record.lines) == 1 for record in table.records):  # no kernel folded: exactly
                assert end - start == wide, (width, table.header[-1])
            else:  # a kernel folded at a blank may leave its column's last characters blank
                assert wide <= end - start <= wide + 10, (width, table.header[-1])


# ---- diff ----------------------------------------------------------------------------------------------------


def moved_text(r: RowComparison) -> list[str]:
    return [f"{figure(f.name).label} {change_text(f)}" for f in r.changed_figures]


def check_group(lines: list[str], rows: tuple[RowComparison, ...], width: int) -> None:
    """One group of a diff: its builds, each a row with the figures that moved, its error under it."""
    table = read_table(lines, ("key", "target", "kernel"), len(rows))
    header_words = [word for line in table.header for word in line.split()]
    by_figure = "moved" not in header_words and not any(line.startswith("moved: ") for record in table.records
                                                         for line in record.under)
    for r, record in zip(rows, table.records):
        assert same(record.cells["key"], r.key) and record.cells["target"] == r.target, record
        assert same(record.cells["kernel"], launch_text(r)), record
        if by_figure:  # a column per figure: each moved figure whole in the row's one line
            assert_headers(table, [figure(f.name).label for f in r.changed_figures])
            for f in r.changed_figures:
                assert change_text(f) in record.lines[0], (change_text(f), record.lines[0])
        else:  # compact: the figures that moved, in the row or under it
            for moved in moved_text(r):
                assert flat(moved) in record.text or flat(moved) in record.said, (moved, record)
        if r.build_changes:
            assert flat(build_text(r)) in record.text + " " + record.said
        status = status_text(r)
        if r.mark in (Mark.NEWLY_FAILING, Mark.STILL_FAILING) and status:
            assert record.said.startswith("error: " + flat(status)[:60]), record.said
            assert not any("error" in line for line in record.lines)
    assert not any(line.rstrip().endswith("→") for line in lines), "a change cut after its arrow"


def comparison_text_and_groups(c: Comparison, width: int) -> tuple[str, list[list[str]]]:
    text = TableFormat(width=width).format(c)
    titles = tuple(f"{mark.value} (" for mark in Mark if mark is not Mark.UNCHANGED)
    return text, [b for b in blocks(text) if b[0].startswith(titles) and len(b) > 1]


def check_comparison(c: Comparison, width: int) -> list[list[str]]:
    """The comparison's text fits ``width``, and each of its groups passes :func:`check_group`; the groups."""
    text, groups = comparison_text_and_groups(c, width)
    assert_fits(text, width)
    seen = 0
    for lines in groups:
        mark = next(m for m in Mark if lines[0].startswith(f"{m.value} ("))
        vendor = re.search(r", (AMD|NVIDIA)\)$", lines[0])
        rows = tuple(r for r in c.with_mark(mark)
                     if vendor is None or get_target(r.target).is_amd == (vendor.group(1) == AMD))
        check_group(lines, rows, width)
        seen += len(rows)
    assert seen == sum(n for m, n in c.counts.items() if m is not Mark.UNCHANGED)
    return groups


@pytest.mark.parametrize("width", WIDTHS)
def test_diff_groups_fit_and_show_what_moved(served: WidthSurveys, width: int) -> None:
    c = compare(served.surveys[0], served.surveys[1])
    assert {r.mark for r in c.rows} >= {Mark.MIXED, Mark.NEWLY_FAILING, Mark.STILL_FAILING}
    groups = check_comparison(c, width)
    if width == 200:  # room for a column per figure, and each build on one line
        assert not any("moved" in " ".join(g[1:3]) for g in groups)


def test_diff_of_a_fix(served: WidthSurveys) -> None:
    """The third commit fixes the two-pass scale: a group of its own, what the error was under each row."""
    c = compare(served.surveys[1], served.surveys[2])
    assert c.counts[Mark.FIXED] == 2
    for width in WIDTHS:
        groups = check_comparison(c, width)
        fixed = [record for g in groups if g[0].startswith("fixed (")
                 for record in read_table(g, ("key", "target", "kernel"), len(g) and 1).records]
        assert len(fixed) == 2 and all(record.said.startswith("was: kind body raised after 1 launch")
                                       for record in fixed)


# ---- stack ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_stack_table_fits_and_keeps_commits_and_counts(served: WidthSurveys, width: int) -> None:
    s = stack(list(served.surveys), list(served.subjects[1:]))
    text = TableFormat(width=width).format_stack(s)
    assert_fits(text, width)
    lines = blocks(text)[0]
    table = read_table(lines, ("commit",), len(s.steps))
    assert_headers(table, ["commit", "keys build", "worse", "mixed", "better", "newly failing", "fixed"])
    for step, record in zip(s.steps, table.records):
        assert record.cells["commit"] == step.commit[:10], record  # whole: never d…
        counts = step.comparison.counts
        ok, total = step.keys_built
        figures = record.after(0)[:6]
        assert figures == [f"{ok}/{total}", *(str(counts[m]) for m in (Mark.WORSE, Mark.MIXED, Mark.BETTER,
                                                                        Mark.NEWLY_FAILING, Mark.FIXED))]
        assert flat(step.subject) in record.text + " " + record.said


# ---- lint findings -----------------------------------------------------------------------------------------------


def lint_findings() -> list[Finding]:
    """Real findings: a miscompile suspect (a mutant that lost ``out_ptr``'s restores) and notes."""
    suspects = [replace(f, key="buffers/w8") for f in findings("restore-removed.amdgcn", "many_buffers-gfx950")]
    notes = [replace(f, key="gemm/w2") for f in findings("matmul-gfx950.amdgcn", "matmul-gfx950", with_ir=False)]
    assert any(f.severity == ERROR for f in suspects) and notes
    return suspects + notes


@pytest.mark.parametrize("width", WIDTHS)
def test_lint_findings_fit(width: int) -> None:
    found = lint_findings()
    text = findings_table(found, kernels=2, width=width)
    assert_fits(text, width)
    ordered = sorted(found, key=lambda f: (f.severity != ERROR, f.key or f.file or "", f.target, f.kernel,
                                           f.arg_index))
    names = ("key / file", "target", "kernel", "argument")
    table = read_table(text.splitlines(), names, len(ordered))
    assert_headers(table, [*names, "severity"])
    for f, record in zip(ordered, table.records):
        assert (record.cells["key / file"], record.cells["target"]) == (f.key, f.target), record
        assert same(record.cells["kernel"], f.kernel), record
        assert same(record.cells["argument"], f"#{f.arg_index} {f.arg_name or '?'} @{f.arg_offset}"), record
        assert f.severity in record.lines[0].split()
        assert flat(f.reason) in record.text + " " + record.said
        assert flat(f.load) in record.text + " " + record.said


# ---- explain ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_fits(served: WidthSurveys, width: int) -> None:
    survey = served.surveys[0]
    names = build_names(survey.rows)
    objects = ObjectStore(served.objects)
    built = [r for r in survey.rows if r.key == "paged_attention_decode_softmax/w2"]
    items = [Explained(r, pressure_of(r, objects), names[(r.target, r.row_id)]) for r in built]
    failed = [r for r in survey.rows if r.failed]
    text = format_text(items, SourcePaths(served.repo, None), 5, failed, width=width)
    assert_fits(text, width)
    lines = text.splitlines()
    for item in items:  # the hottest lines' table: its header whole, a row per line, its location first
        p = item.pressure
        heads = [i for i, line in enumerate(lines) if line.split()[:1] == ["line"]]
        labels = [{"vgpr": "VGPR", "agpr": "AGPR", "sgpr": "SGPR", "gpr": "regs", "ugpr": "uniform"}[c]
                  for c in p.classes]
        assert any(lines[i].split()[1:-3] == ["loop", *labels] for i in heads), labels
        for stats in p.top_lines(5):
            where = SourcePaths(served.repo, None).where(stats.frame)
            assert any(line.startswith(f"    {where} ") for line in lines), where
    said = flat(text)
    for row in failed:  # each build that did not build, its error whole once the lines are joined
        assert flat(row.error_line) in said, row.error_line


def test_the_widths_survey_is_what_the_tests_need(served: WidthSurveys) -> None:
    """The keys are as long as a serving engine's, and the survey has what each check reads."""
    base = served.surveys[0]
    assert max(len(r.key) for r in base.rows) > 30
    assert {r.target for r in base.rows} == {"gfx950", "sm90"}
    assert any(r.failed and "ptxas" in r.error_line for r in base.rows)
    assert any(r.skipped for r in base.rows) and any(r.messages for r in base.rows)
    assert Path(served.repo / "keys" / "serving.py").is_file()
