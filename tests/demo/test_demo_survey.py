"""The built-in demo suite surveyed as a user would (`regsurvey run --commit HEAD`), checked three ways:
every key builds, every figure equals a second reading of the stored object, and every kernel is the
one JITFunction.run compiles for the same launch through a stub driver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from regsurvey.keys.keyfiles import expand_keys, load_kinds

from ..compile.test_toolchain import reference
from ..readings import check_row

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("gfx950", "sm90")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    store = tmp_path_factory.mktemp("demo-store")
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "--commit", "HEAD", "--target", ",".join(TARGETS),
                          "--format", "json", "-q", "--store", str(store)], cwd=ROOT, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    return store, json.loads(out.stdout)


def test_every_demo_key_builds(demo: tuple[Path, dict[str, Any]]) -> None:
    _, survey = demo
    for target in TARGETS:
        rows = [r for r in survey["rows"] if r["target"] == target]
        keys = {r["key"] for r in rows}
        assert len(keys) >= 100, target
        assert [r for r in rows if r["status"] != "ok"] == []


def test_demo_lint_is_clean(demo: tuple[Path, dict[str, Any]]) -> None:
    # Every build is linted in the survey, NVIDIA kernels without a stack frame too, as `regsurvey lint`
    # lints them (one policy): no argument of any demo kernel is loaded and never read, though several
    # kernels spill kernarg SGPRs.
    store, survey = demo
    assert [(r["key"], r["target"]) for r in survey["rows"] if r["lint"] is None] == []
    assert [r for r in survey["rows"] if r["lint"]] == []
    frameless = [r for r in survey["rows"] if r["target"] == "sm90" and not r["resources"]["stack_bytes"]]
    assert frameless and all(r["lint"] == [] for r in frameless)
    out = subprocess.run([sys.executable, "-m", "regsurvey", "lint", "--commit", "HEAD", "--target", ",".join(TARGETS),
                          "-q", "--store", str(store)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    objects = {r["object"]["sha256"] for r in survey["rows"]}
    assert f"{len(objects)} kernels linted: 0 miscompile suspects" in out.stdout


def test_demo_numbers_equal_the_objects(demo: tuple[Path, dict[str, Any]]) -> None:
    store, survey = demo
    for row in survey["rows"]:
        check_row(store, row)


def test_demo_has_realistic_spills_on_gfx950(demo: tuple[Path, dict[str, Any]]) -> None:
    _, survey = demo
    gfx950 = [r for r in survey["rows"] if r["target"] == "gfx950"]
    vgpr = {r["key"] for r in gfx950 if r["resources"]["vgpr_spill"] > 0}
    sgpr = {r["key"] for r in gfx950 if r["resources"]["sgpr_spill"] > 0}
    assert "mla_decode/tp4/w8/e4m3/nostop" in vgpr
    assert any(k.startswith("mla_decode/") for k in sgpr) and any(k.startswith("moe_align/") for k in sgpr)
    # Spilling VGPRs costs scratch; SGPR spills go to VGPR lanes and cost none by themselves.
    for r in gfx950:
        if r["resources"]["vgpr_spill"]:
            assert r["resources"]["scratch_bytes"] > 0


def test_demo_kernels_are_what_a_launch_compiles(demo: tuple[Path, dict[str, Any]]) -> None:
    _, survey = demo
    surveyed = {(r["key"], r["target"], r["launch"]): r["triton_hash"] for r in survey["rows"]}
    sys.path.insert(0, str(ROOT))
    try:
        kinds = {k.name: k for k in load_kinds(ROOT, ROOT / "keys")}
        checked = 0
        for key in expand_keys(list(kinds.values()), list(TARGETS)):
            launched = reference(key.target, lambda key=key: kinds[key.kind].body(**key.axes_dict))
            for i, (_, kernel) in enumerate(launched):
                assert surveyed[(key.id, key.target, i)] == kernel.hash, (key.id, key.target, i)
                checked += 1
    finally:
        sys.path.remove(str(ROOT))
    assert checked == len(survey["rows"])
