"""``regsurvey explain`` on the tiny project's stored survey (a real sm90 build): the annotated source,
Markdown, JSON and HTML, the pressure kept beside the object, and bad input in one line."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.pressure import Pressure

from .. import pressure_kernels as pk
from ..conftest import commit_all, git
from .conftest import Tiny
from .runner import assert_one_line_error, invoke

OPS = "toykernels/ops.py"


def _source_line(tiny: Tiny, number: int) -> str:
    return (tiny.repo / OPS).read_text().splitlines()[number - 1].strip()


def test_the_text_report_annotates_the_kernels_source(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    result = invoke("explain", "scale/width2", *tiny.survey_args())
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("scale/width2 on sm90: kernel scale_rows, ")
    assert "(nvdisasm life ranges)" in out.splitlines()[0]
    (regs,) = [line for line in out.splitlines() if line.startswith("  regs peak ")]
    allocated = tiny_survey["data"]["rows"][0]["resources"]["regs"]
    assert f" of {allocated} allocated at {OPS}:" in regs
    # The peak's line, named relative to the repository (the object names the path it was compiled at).
    peak_line = int(regs.split(f"{OPS}:")[1].split(":")[0])
    assert "no spills" in out
    # The annotated source: every line of the kernel, with its text from the surveyed revision.
    assert f"\n  {OPS}\n" in out
    # (each line cut at the width, 120 columns in a pipe: the source text's start is there)
    annotated = [line for line in out.splitlines()
                 if line.startswith("    ") and _source_line(tiny, peak_line)[:40] in line]
    assert annotated and any(line.split()[0] == str(peak_line) for line in annotated)


def test_json_markdown_and_html_say_the_same(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> None:
    data = json.loads(invoke("explain", "scale/width2", *tiny.survey_args(), "--format", "json").stdout)
    (build,) = data["builds"]
    assert (build["key"], build["target"], build["kernel"]) == ("scale/width2", "sm90", "scale_rows")
    pressure = Pressure.from_dict(build["pressure"])
    assert pressure.classes == ("gpr", "ugpr") and pressure.spills == ()
    peak = pressure.peaks["gpr"].live["gpr"]
    assert 0 < peak <= build["resources"]["regs"] and max(pressure.series["gpr"]) == peak
    markdown = invoke("explain", "scale/width2", *tiny.survey_args(), "--format", "markdown").stdout
    assert markdown.startswith("#### `scale/width2` on sm90: `scale_rows`\n")
    assert f"- regs peak {peak} of {build['resources']['regs']} allocated at `" not in markdown  # plain text
    assert f"- regs peak {peak} of {build['resources']['regs']} allocated at {OPS}:" in markdown
    page = tmp_path / "explain.html"
    html = invoke("explain", "scale/width2", *tiny.survey_args(), "--format", "html", "-o", page)
    assert html.exit_code == 0 and html.stdout == f"wrote {page}\n"
    text = page.read_text()
    assert "<svg" in text and "scale_rows" in text and "tl.store(out_ptr" in text


def test_the_pressure_is_kept_beside_the_object(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    row = tiny_survey["data"]["rows"][0]
    kept = tiny.store / row["object"]["path"].replace(".cubin", ".pressure.gz")
    invoke("explain", "scale/width2", *tiny.survey_args())
    assert kept.exists()
    started = time.perf_counter()
    warm = invoke("explain", "scale/width2", *tiny.survey_args(), "--format", "json")
    print(f"warm explain: {time.perf_counter() - started:.2f} s")  # (a figure, not asserted)
    # A damaged entry is computed again, the same.
    kept.write_bytes(b"not gzip")
    again = invoke("explain", "scale/width2", *tiny.survey_args(), "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout) == json.loads(warm.stdout)


def test_bad_input_is_one_line(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    assert_one_line_error(invoke("explain", "nosuch/*", *tiny.survey_args()),
                          "no key 'nosuch/*' in the survey of working tree (its keys are like idle/width2, "
                          "scale/width2)")
    assert_one_line_error(invoke("explain", "idle/width2", *tiny.survey_args()),
                          "idle/width2 (sm90) did not build: kind body (keys/toy.py:15) launched no kernel")
    assert_one_line_error(invoke("explain", "scale/width2", "--kernel", "other", *tiny.survey_args()),
                          "no build of key 'scale/width2' runs kernel 'other'")
    assert_one_line_error(invoke("explain", "scale/width2", "--key", "x", *tiny.survey_args()),
                          "--kind and --key do not apply: KEY selects the builds")


def test_a_damaged_object_is_compiled_again(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> None:
    """As under ``lint --commit``: a stored object damaged since its survey is compiled again, then explained."""
    store = tmp_path / "store"
    shutil.copytree(tiny.store, store)
    row = tiny_survey["data"]["rows"][0]
    obj = store / row["object"]["path"]
    for kept in obj.parent.glob(obj.name.split(".")[0] + ".pressure.gz"):
        kept.unlink()
    obj.write_bytes(obj.read_bytes()[:100])
    result = invoke("explain", "scale/width2", "-C", tiny.repo, "--store", store, "-q", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"regsurvey: warning: stored object {row['object']['path']} does not match "
                                    "its sha256")
    assert json.loads(result.stdout)["builds"][0]["kernel"] == "scale_rows"
    assert obj.read_bytes()[:4] == b"\x7fELF" and len(obj.read_bytes()) > 100


def test_an_amd_builds_pressure_is_kept_by_the_survey_itself(tiny: Tiny, tmp_path: Path) -> None:
    """On AMD the survey's finishing step computes the pressure (from the amdgcn text the worker holds)
    and keeps it beside the object: it is there before any ``explain``, equal to what ``explain`` shows
    and to a computation from the stored text, and the survey's timing says what it cost."""
    from regsurvey.pressure.amd import amd_pressure
    from regsurvey.store.objectstore import ObjectStore

    store = tmp_path / "store"
    args = ("-C", str(tiny.repo), "--store", str(store), "-q")
    result = invoke("run", *args, "--target", "gfx950", "--key", "scale/*", "--format", "json")
    assert result.exit_code == 0, result.stderr
    survey = json.loads(result.stdout)
    (row,) = survey["rows"]
    obj = store / row["object"]["path"]
    kept = obj.with_name(obj.name.replace(".hsaco", ".pressure.gz"))
    assert kept.exists()
    assert survey["timing"]["pressure_s"] > 0
    objects = ObjectStore(store / "objects")  # (each text kept behind a header naming its object)
    stored = Pressure.from_dict(json.loads(objects.text(row["object"]["path"], "pressure") or ""))
    amdgcn = objects.text(row["object"]["path"], "amdgcn") or ""
    assert stored == amd_pressure(amdgcn, "gfx950")
    assert stored.classes[0] == "vgpr" and 0 < stored.peaks["vgpr"].live["vgpr"] <= row["resources"]["vgpr"]
    explained = invoke("explain", "scale/width2", *args, "--target", "gfx950", "--format", "json")
    assert explained.exit_code == 0, explained.stderr
    assert Pressure.from_dict(json.loads(explained.stdout)["builds"][0]["pressure"]) == stored


# A kernel that builds at one block size and not at the other (tl.arange wants a power of two), and one that
# spills (tests/pressure_kernels.py: a tile kept across a loop by one wave held to 64 VGPRs by waves_per_eu=8).
BLOCKS_KEYS = '''
import regsurvey as rs
from kernels import peak_kernel, spill_kernel

matrix = rs.Matrix(targets=["gfx950"], block=[1024, 1000, 2048])


@matrix.kind(axes=["block"], block=[1024, 1000])
def peak(block):
    x, y, out = rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32")
    peak_kernel[(1,)](x, y, out, BLOCK=block, num_warps=1)


@matrix.kind(axes=["block"], block=[2048])
def spill(block):
    x, y, out = rs.tensor((block,), "fp32"), rs.tensor((4 * block,), "fp32"), rs.tensor((block,), "fp32")
    spill_kernel[(1,)](x, y, out, BLOCK=block, N=4, num_warps=1, waves_per_eu=8)
'''


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A project of two keys, one that builds and one whose compile fails; its survey args and run's JSON."""
    root = tmp_path_factory.mktemp("blocks")
    repo = root / "proj"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "k.py").write_text(BLOCKS_KEYS)
    shutil.copy(pk.__file__, repo / "kernels.py")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "the kernels")
    args = ("-C", str(repo), "--store", str(root / "store"), "-q")
    run = invoke("run", *args, "--format", "json")
    assert run.exit_code == 0, run.stderr
    return args, json.loads(run.stdout)


def test_a_failed_build_says_why_as_run_does(blocks: tuple[tuple[str, ...], dict[str, Any]]) -> None:
    """Not the compile error's location (``CompilationError: at 4:8:``) but its cause, the line ``run``
    shows."""
    args, survey = blocks
    failed = next(r for r in survey["rows"] if r["key"] == "peak/block1000")
    assert failed["status"] == "error" and failed["error"].startswith("CompilationError: at ")
    lines = invoke("run", *args).stdout.splitlines()
    (row,) = [i for i, line in enumerate(lines) if line.startswith("peak/block1000 ")]
    assert lines[row + 1] == "    error: arange's range must be a power of 2"  # a line of its own under the row
    assert_one_line_error(invoke("explain", "peak/block1000", *args),
                          "peak/block1000 peak_kernel (gfx950) did not build: arange's range must be a power of 2")


def test_a_glob_explains_what_built_and_lists_what_did_not(blocks: tuple[tuple[str, ...], dict[str, Any]]) -> None:
    args, _ = blocks
    text = invoke("explain", "peak/*", *args)
    assert text.exit_code == 0, text.stderr
    assert text.stdout.startswith("peak/block1024 on gfx950: kernel peak_kernel, ")
    assert text.stdout.endswith("did not build (1):\n  peak/block1000 on gfx950 (peak_kernel): "
                                "arange's range must be a power of 2\n")
    data = json.loads(invoke("explain", "peak/*", *args, "--format", "json").stdout)
    assert [b["key"] for b in data["builds"]] == ["peak/block1024"]
    assert data["failed"] == [{"key": "peak/block1000", "target": "gfx950", "kernel": "peak_kernel", "launch": 0,
                               "status": "error", "error": "arange's range must be a power of 2"}]
    markdown = invoke("explain", "peak/*", *args, "--format", "markdown").stdout
    assert markdown.endswith("\n\nDid not build (1):\n\n- peak/block1000 on gfx950 (peak_kernel): arange's range "
                             "must be a power of 2\n")


def test_beside_spills_the_peak_says_what_it_counts_and_the_demand_before_spilling(
        blocks: tuple[tuple[str, ...], dict[str, Any]]) -> None:
    """A wave held to 64 VGPRs spills 4 dwords of the kept tile: the VGPR peak (registers after allocation and
    spilling) is 63, and the demand before spilling 67, the peak and the 4 dwords waiting in scratch."""
    args, survey = blocks
    (row,) = [r for r in survey["rows"] if r["key"] == "spill/block2048"]
    assert (row["resources"]["vgpr"], row["resources"]["vgpr_spill"]) == (64, 4)
    out = invoke("explain", "spill/block2048", *args, "--columns", "300").stdout.splitlines()  # a line a sentence
    loop = f"kernels.py:{pk.marked_line('LOOP')}"
    assert out[1].startswith(f"  VGPR peak 63 of 64 allocated at {loop}: ")
    assert out[2].startswith(f"  VGPR demand before spilling: 67 at {loop}: ")
    assert out[2].endswith("(the values live at once, those waiting in spill slots too; the peak counts registers "
                           "after allocation and spilling)")
    assert out[4] == "  1 spill store, 1 reload (4 dwords to scratch)"
    data = json.loads(invoke("explain", "spill/block2048", *args, "--format", "json").stdout)
    demand = Pressure.from_dict(data["builds"][0]["pressure"]).demand
    assert set(demand) == {"vgpr"} and demand["vgpr"].live["vgpr"] == 67
