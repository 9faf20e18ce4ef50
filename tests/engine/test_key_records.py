"""Unchanged keys are not run again (issue 37, item 2: ``engine.key_reads``, ``engine.key_records``), with
the real toolchain on a copy of the toy project: each kind of change a kind body can see (a kernel's source,
a helper module's function, a tuned-config file the launcher opens, an environment variable it reads)
runs again exactly the keys whose bodies read it, nothing else does, and the rows taken from the records
equal a survey that ran every key (``--force``), build for build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.engine.key_reads import skeleton
from regsurvey.engine.key_records import namespace
from regsurvey.objects.object_sections import code_differs

KEYS = '''"""Kinds that read a helper module, a config file and an environment variable."""

import json
import os
from pathlib import Path

import helper
from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[2, 8])
HERE = Path(__file__).resolve().parent


def _ran(kind, width):
    Path(os.environ["MARKS"], f"{kind}-{width}").write_text("")  # written, not read: no input


@matrix.kind(axes=["width"])
def helped(width):
    _ran("helped", width)
    ops.scale(rs.tensor((width, helper.columns()), "bf16"), 0.5)


@matrix.kind(axes=["width"])
def configured(width):
    _ran("configured", width)
    with open(HERE.parent / "tuned.json") as f:
        block_n = json.load(f)["block_n"]
    ops.gemm(rs.tensor((width, 256), "bf16"), rs.tensor((256, 128), "bf16"), block_n=block_n)


@matrix.kind(axes=["width"])
def environment(width):
    _ran("environment", width)
    ops.scale(rs.tensor((width, int(os.environ.get("TOY_COLUMNS", "512"))), "bf16"), 0.5)
'''

HELPER = '''"""A helper module the ``helped`` kind calls."""

SCALE = 1


def columns():
    return 1024 * SCALE


def unused():
    return 3
'''


@pytest.fixture
def project(toy_repo: Path, tmp_path: Path) -> Path:
    (toy_repo / "keys" / "toy.py").unlink()
    (toy_repo / "keys" / "reads.py").write_text(KEYS)
    (toy_repo / "helper.py").write_text(HELPER)
    (toy_repo / "tuned.json").write_text(json.dumps({"block_n": 64}))
    (tmp_path / "marks").mkdir()
    return toy_repo


def _survey(repo: Path, tmp_path: Path, *args: str, **env: str) -> tuple[dict, set[str]]:
    marks = tmp_path / "marks"
    for mark in marks.iterdir():
        mark.unlink()
    environ = {**os.environ, "MARKS": str(marks), "REGSURVEY_SERVER": "off", **env}
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "-j", "2", "--format", "json",
                          "--store", str(tmp_path / "store"), *args], cwd=repo, env=environ, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), {m.name for m in marks.iterdir()}


def _builds(survey: dict) -> dict[tuple[str, int], tuple]:
    return {(r["key"], r["launch"]): (r["status"], r["triton_hash"], json.dumps(r["resources"], sort_keys=True),
                                      r["kernel"], r["lint"]) for r in survey["rows"]}


def _same_code(store: Path, *surveys: dict) -> None:
    """Every build's object is the same code in each survey: byte for byte, or (Triton's cache handing out an
    object compiled from another checkout of the toy kernels, as --force's fresh compile is not) differing
    in its debug sections only."""
    objects = {}
    for survey in surveys:
        for r in survey["rows"]:
            if r["object"]:
                objects.setdefault((r["key"], r["launch"]), set()).add(r["object"]["sha256"])
    for build, shas in objects.items():
        found = [next(store.rglob(f"{sha}.hsaco")).read_bytes() for sha in sorted(shas)]
        assert all(code_differs(found[0], other) is False for other in found[1:]), build


EVERY = {f"{kind}-{width}" for kind in ("helped", "configured", "environment") for width in (2, 8)}


def test_only_the_keys_whose_inputs_changed_run_again(project: Path, tmp_path: Path) -> None:
    first, ran = _survey(project, tmp_path)
    assert ran == EVERY and "keys_unchanged" not in first["timing"]
    again, ran = _survey(project, tmp_path)
    assert ran == set() and again["timing"]["keys_unchanged"] == 6
    forced, ran = _survey(project, tmp_path, "--force")
    assert ran == EVERY
    assert _builds(again) == _builds(first) == _builds(forced)  # every figure of every build, unchanged
    _same_code(tmp_path / "store", first, again, forced)

    # A helper module's function: the kind that called it.
    (project / "helper.py").write_text(HELPER.replace("1024 * SCALE", "2048 * SCALE"))
    _, ran = _survey(project, tmp_path)
    assert ran == {"helped-2", "helped-8"}
    # An edit inside a function no key ran: the file's code ran for ``helped`` (a file counts whole), and
    # for no other kind (its module's state is the same).
    (project / "helper.py").write_text(HELPER.replace("1024 * SCALE", "2048 * SCALE")
                                       .replace("return 3", "return 4  # never called"))
    _, ran = _survey(project, tmp_path)
    assert ran == {"helped-2", "helped-8"}
    # Module-level state of a module the keys import: every key (its value may be read by any).
    (project / "helper.py").write_text(HELPER.replace("SCALE = 1", "SCALE = 2"))
    _, ran = _survey(project, tmp_path)
    assert ran == EVERY
    # The config file the launcher opens.
    (project / "tuned.json").write_text(json.dumps({"block_n": 128}))
    _, ran = _survey(project, tmp_path)
    assert ran == {"configured-2", "configured-8"}
    # An environment variable a body reads (unset before).
    _, ran = _survey(project, tmp_path, TOY_COLUMNS="256")
    assert ran == {"environment-2", "environment-8"}
    _, ran = _survey(project, tmp_path, TOY_COLUMNS="256")
    assert ran == set()
    # A kernel's source: every key launching a kernel of that file.
    ops = project / "toykernels" / "ops.py"
    ops.write_text(ops.read_text().replace("mask = offs < n_cols", "mask = offs < n_cols  # the bound"))
    last, ran = _survey(project, tmp_path, TOY_COLUMNS="256")
    assert ran == EVERY
    # A build's object damaged in the store: its key runs again and makes it again.
    row = next(r for r in last["rows"] if r["key"] == "configured/width2")
    (damaged,) = (tmp_path / "store").rglob(f"{row['object']['sha256']}.*saco")
    damaged.write_bytes(b"not an object")
    _, ran = _survey(project, tmp_path, TOY_COLUMNS="256")
    sharing = {r["key"].replace("/width", "-") for r in last["rows"]
               if (r["object"] or {}).get("sha256") == row["object"]["sha256"]}
    assert "configured-2" in sharing and ran == sharing  # (the widths compile to one object)


def test_a_module_skeleton_leaves_function_bodies_out() -> None:
    source = b"import os\nLIMIT = 4\n\n\ndef f(x):\n    return x + 1\n"
    assert skeleton(source) == skeleton(source.replace(b"x + 1", b"x + 2  # changed"))
    assert skeleton(source) != skeleton(source.replace(b"LIMIT = 4", b"LIMIT = 5"))
    assert skeleton(source) != skeleton(source.replace(b"def f(x)", b"def f(x, y=0)"))


def test_another_toolchain_is_another_namespace() -> None:
    """A Triton upgrade (the survey's toolchain block) makes every record of the old one not apply."""
    assert namespace({"amd": {"triton": "3.9.0"}}) != namespace({"amd": {"triton": "3.6.0"}})
