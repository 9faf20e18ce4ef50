"""The command line: the ``regsurvey`` group. Each subcommand lives in ``regsurvey/commands/`` (imported
when it runs): it parses arguments, calls the library and chooses the exit status, nothing else."""

from __future__ import annotations

import click

from .commands import LazyGroup
from .commands.helptext import examples
from .model.version import __version__


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=examples(
    ("regsurvey run --target gfx950,sm90", "survey every key of the working tree for gfx950 and sm90"),
    ("regsurvey diff main", "compare main's survey with the working tree's, build by build"),
))
@click.version_option(__version__, prog_name="regsurvey")
def main() -> None:
    """Register, spill and occupancy surveys of Triton kernels, key by key, target by target.

    Compiles every kernel key of a commit offline on the installed Triton (no GPU needed) for AMD
    gfx942/gfx950 (gfx1100, gfx1151, gfx1201, gfx1250 on request) and NVIDIA sm90/sm100 (sm103, sm120 on
    request), and reads what the objects really use. A target that Triton cannot build for is refused,
    naming the Triton release that can.
    """


if __name__ == "__main__":  # pragma: no cover
    main()
