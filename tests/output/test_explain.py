"""``explain``'s words (:mod:`regsurvey.output.explain`) on a real kernel's pressure: conch's varlen attention
on gfx942 (tests/fixtures/pressure/regenerate.py)."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

from regsurvey.output.explain import spill_summary
from regsurvey.pressure.amd import amd_pressure

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pressure" / "conch-varlen-gfx942.amdgcn.gz"


def test_the_spill_summary_counts_in_the_number_each_count_takes() -> None:
    pressure = amd_pressure(gzip.decompress(FIXTURE.read_bytes()).decode(), "gfx942")
    assert spill_summary(pressure) == "27 spill stores, 47 reloads (27 dwords to VGPR lanes (SGPRs))"
    store = next(s for s in pressure.spills if s.kind == "store")
    reload = next(s for s in pressure.spills if s.kind == "reload")
    assert spill_summary(replace(pressure, spills=(store, reload))) == \
        "1 spill store, 1 reload (1 dword to VGPR lanes (SGPRs))"
