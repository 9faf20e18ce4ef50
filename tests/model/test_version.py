"""regsurvey's version and the revision of its object readers and lint (model/version.py): the version is
the package's, and every part of the reader revision (what makes cached results and stored surveys of
another revision stop matching) is explained beside it."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

import regsurvey
from regsurvey.model import version
from regsurvey.model.version import READER_REVISION, __version__

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_the_packages() -> None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    assert __version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert regsurvey.__version__ == __version__
    from regsurvey.cli import main

    assert CliRunner().invoke(main, ["--version"]).output == f"regsurvey, version {__version__}\n"


def test_the_reader_revision_is_the_version_and_one_revision_of_each_part_each_explained() -> None:
    version_, *parts = READER_REVISION.split("+")
    assert version_ == __version__ and parts
    assert all(re.fullmatch(r"[a-z]+[0-9]+", part) for part in parts), parts
    names = [re.sub(r"[0-9]+$", "", part) for part in parts]
    assert len(set(names)) == len(names)  # one revision of each part
    source = Path(version.__file__).read_text()
    unexplained = [part for part in parts if not re.search(rf"^# {part}: \S", source, re.MULTILINE)]
    assert unexplained == []
