"""``regsurvey prune`` from a saved survey (torchao's blockwise fp8 GEMM on gfx950,
``tests/fixtures/prune``): the table on stdout or in a file, a line per kernel on stderr, and bad input in
one line."""

from __future__ import annotations

import json
from pathlib import Path

from regsurvey.model.prune import PruneTable

from ..conftest import FIXTURES
from .runner import UNKNOWN_TARGET, assert_one_line_error, invoke

SURVEY = FIXTURES / "prune" / "torchao_gfx950.json"


def test_the_table_of_a_saved_survey(tmp_path: Path) -> None:
    out = tmp_path / "tables" / "prune.json"
    result = invoke("prune", "--commit", SURVEY, "--spill-above", "1000", "-o", out, "-C", tmp_path)
    assert result.exit_code == 0, result.stderr
    table = PruneTable.from_json(out.read_text())
    assert (table.spill_above, table.targets, table.surveyed) == (1000, ("gfx950",), {"gfx950": 96})
    assert sorted({c.config for c in table.configs["gfx950"]}) == [22, 23, 46, 47]
    seconds = sum(c.compile_s for c in table.configs["gfx950"])
    assert result.stderr == (f"gfx950 blockwise_fp8_gemm_kernel: 4 configs pruned (8 builds: 4 spill past 1000 B, "
                             f"4 cannot launch), {seconds:.1f} s of compile\nprune table → {out}\n")
    assert json.loads(out.read_text())["report"] == "prune-table"


def test_the_table_on_stdout_narrowed_to_a_target(tmp_path: Path) -> None:
    result = invoke("prune", "--commit", SURVEY, "-t", "sm90", "-C", tmp_path)
    assert result.exit_code == 0, result.stderr
    assert PruneTable.from_json(result.stdout).configs == {}
    result = invoke("prune", "--commit", SURVEY, "--key", "*/width4", "-C", tmp_path)
    assert {c.builds[0].key for c in PruneTable.from_json(result.stdout).configs["gfx950"]} == {
        "fp8_linear/q_a/width4"}


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(invoke("prune", "--commit", SURVEY, "-t", "gfx999", "-C", tmp_path), UNKNOWN_TARGET)
    table = tmp_path / "table.json"
    table.write_text(PruneTable(None, "x", {}, 64, {}).to_json())
    result = invoke("prune", "--commit", table, "-C", tmp_path)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"regsurvey: error: survey file {table} is unusable: ")
    assert len(result.stderr.splitlines()) == 1
