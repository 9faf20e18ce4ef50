"""``regsurvey coverage CAPTURE``: the real launches a project's keys miss (a JIT compile in production
after warmup), and the keys no real launch used, per kernel, with what differs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..coverage.compare import coverage as compare_coverage
from ..coverage.launches import CaptureFileError, KeysFileError, key_launches, read_capture, real_launches
from ..model.coverage import Coverage
from ..model.targets import get_target
from .common import EXIT_FINDINGS, EXIT_OK, command_errors
from .helptext import examples
from .options import TARGET_NAMES, format_option, write_report


@click.command(epilog=examples(
    ("regsurvey coverage run.jsonl", "the launches of run.jsonl (capture --records) that no key of keys/ produces"),
    ("regsurvey coverage run.jsonl --target gfx950 --kind 'moe_*' --format json",
     "the same on gfx950 for the MoE kinds' keys, as JSON"),
))
@click.argument("capture", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-t", "--target", "target", metavar="TARGET",
              help=f"The target to specialize both sides for ({TARGET_NAMES}; default: the capture's device).")
@click.option("--kind", "kinds", multiple=True, metavar="GLOB", help="Only the keys of kinds matching this pattern.")
@click.option("--key", "keys", multiple=True, metavar="GLOB", help="Only keys whose id matches.")
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="The project (its keys/ directory) as if started in this directory.")
@format_option(Coverage)
@click.option("--strict", is_flag=True, help="Exit 1 when a real launch is missed.")
def coverage(capture: Path, target: str | None, kinds: tuple[str, ...], keys: tuple[str, ...], repo: Path,
             fmt: str, strict: bool) -> None:
    """List the launches in CAPTURE (``regsurvey capture --records``) whose Triton cache hash no key of the
    project produces, and the keys no launch used, per kernel, each with the nearest launch of the other
    side and the argument that differs (a dtype, divisibility by 16, a constexpr, an option).

    Nothing is compiled: both sides are specialized by Triton's own binder for the target and hashed as
    Triton's cache hashes them (the hash a survey's rows carry).
    """
    from ..output.formats import render

    root = repo.resolve()
    with command_errors(CaptureFileError, KeysFileError):
        header, records = read_capture(capture)
        chosen = get_target(target or header.get("device") or _no_device(capture))
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))  # the project's kernels, as its keys files import them
        ours = key_launches(root, chosen, kinds, keys)
        theirs = real_launches(capture, records, chosen)
    result = compare_coverage(chosen.name, str(capture), len(records), ours.runs, ours.by_hash.values(),
                              theirs.by_hash.values(), tuple(theirs.problems), tuple(ours.problems))
    write_report(render(result, fmt), fmt)
    sys.exit(EXIT_FINDINGS if strict and result.missed_launches else EXIT_OK)


def _no_device(capture: Path) -> str:
    raise CaptureFileError(f"{capture} names no device (captured without a GPU and without --offline): "
                           "give --target")
