"""``regsurvey explain`` on the tiny project's stored survey (a real sm90 build): the annotated source,
Markdown, JSON and HTML, the pressure kept beside the object, and bad input in one line."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from regsurvey.model.pressure import Pressure

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
    annotated = [line for line in out.splitlines() if line.startswith("    ") and _source_line(tiny, peak_line) in line]
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
    import gzip

    from regsurvey.pressure.amd import amd_pressure

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
    stored = Pressure.from_dict(json.loads(gzip.decompress(kept.read_bytes())))
    amdgcn = gzip.decompress(obj.with_name(obj.name.replace(".hsaco", ".amdgcn.gz")).read_bytes()).decode()
    assert stored == amd_pressure(amdgcn, "gfx950")
    assert stored.classes[0] == "vgpr" and 0 < stored.peaks["vgpr"].live["vgpr"] <= row["resources"]["vgpr"]
    explained = invoke("explain", "scale/width2", *args, "--target", "gfx950", "--format", "json")
    assert explained.exit_code == 0, explained.stderr
    assert Pressure.from_dict(json.loads(explained.stdout)["builds"][0]["pressure"]) == stored
