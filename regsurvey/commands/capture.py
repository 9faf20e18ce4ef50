"""``regsurvey capture -- COMMAND ...``: run a program, record its Triton launches, write a keys file."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import click

from ..capture.recorder import capture_environment, group_launches, keys_file_text, read_records
from ..model.targets import UnknownTargetError, get_target
from ..model.words import ARROW, count
from ..store.files import write_text
from .common import EXIT_OK, fail, split_csv, writing
from .helptext import examples
from .options import TARGET_NAMES


@click.command(context_settings={"ignore_unknown_options": True}, epilog=examples(
    ("regsurvey capture -o keys/decode_step.py -- python serve_one_step.py --batch 4",
     "run one serving step on this machine's GPU and write a key per distinct launch"),
    ("regsurvey capture --offline sm90 -- python bench.py",
     "no GPU: record bench.py's launches for sm90 without running them"),
))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("keys/captured.py"), show_default=True, help="The keys file to write.")
@click.option("--offline", "offline", metavar="TARGET",
              help="No GPU: a stub driver for TARGET stands in, launches are recorded, not run.")
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help=f"Targets the keys file surveys ({TARGET_NAMES}; default: the captured device, else gfx950 and "
                   "sm90).")
@click.option("--records", "records_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also keep the raw launch records (JSON lines) here.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def capture(output: Path, offline: str | None, targets: tuple[str, ...], records_path: Path | None,
            command: tuple[str, ...]) -> None:
    """Run COMMAND (a Python program) and write a keys file replaying every distinct launch."""
    try:
        if offline:
            offline = get_target(offline).name
        chosen = [get_target(t).name for t in split_csv(targets)]
    except UnknownTargetError as exc:
        fail(str(exc))
    with tempfile.TemporaryDirectory(prefix="regsurvey-capture-") as tmp:
        capture_file = records_path or Path(tmp) / "launches.jsonl"
        capture_file.parent.mkdir(parents=True, exist_ok=True)
        capture_file.write_text("")
        env = capture_environment(capture_file, Path(tmp) / "site", offline)
        try:
            status = subprocess.run(list(command), env=env).returncode
        except FileNotFoundError:
            fail(f"cannot run {command[0]!r}: no such program")
        header, records = read_records(capture_file)
    device = header.get("device")
    if not chosen:
        chosen = [get_target(device).name] if device else ["gfx950", "sm90"]
    groups = group_launches(records)
    if groups:
        with writing(output):
            output.parent.mkdir(parents=True, exist_ok=True)
            write_text(output, keys_file_text(groups, chosen, list(command), device))
        click.echo(f"captured {count(len(records), 'launch')}: {sum(map(len, groups.values()))} distinct, "
                   f"{count(len(groups), 'kernel')} {ARROW} {output}", err=True)
    else:
        click.echo("captured no Triton launch; no keys file written", err=True)
    if status != 0:
        click.echo(f"regsurvey: the program exited with status {status}", err=True)
        sys.exit(status)
    sys.exit(EXIT_OK)
