"""``regsurvey explain``: where a build's registers go, line by line of the kernel's own source."""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

import click

from ..engine.other_toolchain import nvdisasm_of
from ..errors import CorruptObjectError
from ..model.names import BuildName, build_names
from ..model.results import Row, Survey
from ..output.explain import Explained, Explanation, failure_text
from ..repo.checkout import repo_root
from ..repo.sources import SourcePaths
from ..revisions.obtain import open_store, surveyed_and_used
from ..store.objectstore import ObjectStore
from .common import EXIT_OK, command_errors, fail
from .helptext import examples
from .options import (
    TARGET_NAMES,
    columns_option,
    format_option,
    make_survey_options,
    report_style,
    selection_options,
    store_options,
    toolchain_option,
    write_report,
)


@click.command(epilog=examples(
    ("regsurvey explain 'mla_decode/tp4/w8/*' --target gfx950",
     "where the registers of every matching build go on gfx950, in the terminal"),
    ("regsurvey explain gemm/w2 --commit HEAD~1 --format html",
     "the same for gemm/w2 at the parent commit, written to reports/explain-gemm_w2.html"),
))
@click.argument("key")
@click.option("--commit", "rev", metavar="REV", help="Explain the build of this git revision (default: the "
              "working tree). A stored survey made with this toolchain is reused.")
@click.option("--kernel", metavar="NAME", help="Only the builds of this kernel, or of the launches the kind body "
              "gave this name (rs.name): a key may launch several.")
@format_option(Explanation)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report here (default: stdout; HTML: reports/explain-<key>.html at the repository "
                   "root).")
@click.option("--top", type=click.IntRange(1), default=12, show_default=True,
              help="How many of the lines holding the most registers to list.")
@selection_options(target_help=f"Only the builds for these targets (repeat or comma-separate: {TARGET_NAMES}); "
                   "surveyed if the stored survey has none.")
@store_options
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@toolchain_option
@columns_option
def explain(key: str, rev: str | None, kernel: str | None, fmt: str, output: Path | None, top: int,
            targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...], jobs: int | None,
            timeout: float, quiet: bool, store_dir: Path | None, repo: Path, columns: int | None,
            toolchain: str | None) -> None:
    """Where KEY's registers go: the live registers along its code, the peak, every spill store and
    reload, each on the Triton source line it came from (helpers inlined at a call site count there too).

    KEY is a key id or a glob over key ids (`mla_decode/tp4/w8/*`); every matching build is explained.
    The figures come from the compiled object alone: on AMD from a liveness analysis of its amdgcn, on
    NVIDIA from nvdisasm's life ranges (the nvdisasm of the toolchain that built it); spills as the compiler
    marked them. Computed once per object and kept beside it in the store. With --toolchain, the build of
    that environment's Triton (its stored survey reused, as `run --toolchain` stores it, else surveyed).
    """
    from ..output.formats import render
    from ..output.progress import survey_progress

    if kinds or keys:
        fail("--kind and --key do not apply: KEY selects the builds")
    start = repo.resolve()
    with command_errors(CorruptObjectError):
        options = make_survey_options(targets, (), (), jobs, timeout, toolchain)
        store = open_store(store_dir, start)
        nvdisasm = nvdisasm_of(options.toolchain)  # the one that reads that toolchain's cubins

        def explained(survey: Survey) -> tuple[list[Explained], list[Row]]:
            names = build_names(survey.rows)
            built, failed = _chosen(survey, key, kernel, names)
            return _explained(built, names, store.objects, nvdisasm), failed

        try:
            # (an object damaged since its survey: surveyed again, then explained)
            survey, (items, failed) = surveyed_and_used(start, rev, store, options, explained,
                                                        lambda: survey_progress(enabled=not quiet))
        except ValueError as exc:  # a text that holds no kernel (or an object damaged again)
            fail(str(exc))
    root = repo_root(start)
    explanation = Explanation(tuple(items), tuple(failed), SourcePaths(root, survey.commit, checkout=start), top)
    text = render(explanation, fmt, report_style(columns, terminal=output is None))
    write_report(text, fmt, output, (root or start) / "reports" / f"explain-{_file_part(key)}.html")
    sys.exit(EXIT_OK)


def _explained(built: list[Row], names: dict[tuple[str, str], BuildName], objects: ObjectStore,
               nvdisasm: str | None) -> list[Explained]:
    """The builds chosen, each with its name and pressure (a cubin's read by ``nvdisasm``, where not this
    environment's)."""
    from ..kept_pressure import pressure_of

    return [Explained(row, pressure_of(row, objects, nvdisasm), names[(row.target, row.row_id)]) for row in built]


def _chosen(survey: Survey, key: str, kernel: str | None,
            names: dict[tuple[str, str], BuildName]) -> tuple[list[Row], list[Row]]:
    """The rows of ``survey`` that KEY and --kernel select: those that built (to explain) and those that
    did not (listed with their error); one line (exit 2) when none built."""
    matching = [r for r in survey.rows if r.key == key or fnmatch.fnmatchcase(r.key, key)]
    if not matching:
        known = sorted({r.key for r in survey.rows})
        hint = f" (its keys are like {', '.join(known[:3])})" if known else ""
        fail(f"no key {key!r} in the survey of {survey.label}{hint}")
    if kernel is not None:  # a kernel, or the name the kind body gave a launch (rs.name, rs.names)
        matching = [r for r in matching if kernel in (r.kernel, r.name)]
        if not matching:
            fail(f"no build of key {key!r} runs kernel {kernel!r}")
    built = [r for r in matching if r.ok and r.object is not None]
    if not built:
        # The line `run` shows for each (a compile error's cause, not its location).
        fail("; ".join(f"{names[(r.target, r.row_id)]} ({r.target}) did not build: {failure_text(r)}"
                       for r in matching))
    return built, [r for r in matching if not r.ok and not r.skipped]


def _file_part(key: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in key).strip("_") or "key"
