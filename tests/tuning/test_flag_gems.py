"""``prune_by_survey`` in FlagGems' own autotuner (``LibTuner``, a subclass of Triton's with a ``run`` of its
own that prunes through ``Autotuner.prune_configs`` before it benchmarks): ``flag_gems.ops.mm`` on gfx950,
where 3 of its 14 configs need more LDS than the MI355X CU's 160 KiB (occupancy 0: they cannot launch).

The committed survey (``tests/fixtures/prune/flag_gems_mm_gfx950.json``) is regenerated in a copy of
``tests/realworld/flag_gems`` (a git repository of its own) with FlagGems installed::

    regsurvey run --target gfx950 --kind mm --key 'mm/t16/*' --format json > flag_gems_mm_gfx950.json

FlagGems picks its configs by vendor when imported, so it is imported in a child interpreter, under the
stand-in gfx950 device, as a survey's gfx950 worker imports it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.model.results import Survey
from regsurvey.tuning.select import prune_table

from ..conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
CHILD = '''
import json, os, sys
os.environ["GEMS_VENDOR"], os.environ["FLAGGEMS_DB_URL"] = "amd", "sqlite://"
import regsurvey as rs
from regsurvey.compile import toolchain
from regsurvey.model.targets import get_target
from regsurvey.tuning import prune_by_survey
with toolchain.device_as(get_target("gfx950")):
    import importlib
    mm = importlib.import_module("flag_gems.ops.mm")  # (flag_gems.ops.mm, as an attribute, is the op)
    tuner = mm.mm_kernel_general.fn  # LibEntry -> LibTuner
    tuner.early_config_prune = prune_by_survey(sys.argv[1], mm.mm_kernel_general)  # the running GPU: gfx950
    a, b, c = rs.tensor((16, 4096), "bf16"), rs.tensor((4096, 6144), "bf16"), rs.tensor((16, 6144), "bf16")
    tuner.nargs = dict(zip(tuner.arg_names, (a, b, c, 16, 6144, 4096, 4096, 1, 6144, 1, 6144, 1)))
    kept = tuner.prune_configs({})
print(json.dumps({"all": [[c.kwargs, c.num_warps, c.num_stages] for c in tuner.configs],
                  "kept": [[c.kwargs, c.num_warps, c.num_stages] for c in kept]}))
'''


def test_libtuner_keeps_the_configs_that_launch(tmp_path: Path) -> None:
    if importlib.util.find_spec("flag_gems") is None:  # (importing it here, without a device, raises)
        pytest.skip("FlagGems is not installed")
    survey = Survey.from_json((FIXTURES / "prune" / "flag_gems_mm_gfx950.json").read_text())
    table = prune_table(survey)
    assert sorted(c.config for c in table.configs["gfx950"]) == [3, 9, 10]
    assert {c.reason.value for c in table.configs["gfx950"]} == {"cannot launch"}
    path = tmp_path / "prune.json"
    path.write_text(table.to_json())
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    answer = json.loads(out.stdout.splitlines()[-1])
    # Pruned by value: each row's constexprs (the config's BLOCK_M/N/K; GROUP_M, which FlagGems passes itself, and
    # the strides Triton specialized as 1) and warps and stages, against the tuner's configs as FlagGems loaded them.
    bad = [[{k: r.build[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}, r.num_warps, r.num_stages]
           for r in survey.rows if r.resources.get("occupancy") == 0]
    assert len(answer["all"]) == 14 and len(bad) == 3
    assert answer["kept"] == [c for c in answer["all"] if c not in bad]
