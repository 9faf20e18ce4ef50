"""The first-stage fixtures: real builds of one kernel made two ways (Triton 3.6.0 and 3.9.0, fp fusion on and
off, the kernel three lines lower), with the texts and objects a survey keeps beside them, in a store's
``objects/`` (``tests/fixtures/stages``; its ``regenerate.py`` makes them and says how)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from regsurvey.diff.core import compare
from regsurvey.model.comparison import Comparison
from regsurvey.model.results import Row, Survey
from regsurvey.model.stages import Stage
from regsurvey.store.objectstore import ObjectStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "stages"
OBJECTS = ObjectStore(FIXTURES / "store" / "objects")


@dataclass(frozen=True)
class StageCase:
    """One kernel built two ways, and the stage whose output first differs."""

    stage: Stage
    how: str  # what differs between the builds: "Triton 3.6.0 -> 3.9.0"
    target: str
    key: str
    before: Row
    after: Row

    @property
    def name(self) -> str:
        """``ptx-sm90-kv_write/bf16/nostop``: a test id."""
        return f"{self.stage.value}-{self.target}-{self.key}"


def stage_cases() -> list[StageCase]:
    """Every case of ``cases.json``, its rows as the surveys wrote them."""
    return [StageCase(Stage(c["stage"]), c["how"], c["target"], c["key"], Row.from_dict(c["before"]),
                      Row.from_dict(c["after"])) for c in json.loads((FIXTURES / "cases.json").read_text())]


def kept_texts(row: Row) -> dict[Stage, str]:
    """The texts the fixture store keeps beside ``row``'s object, by stage."""
    assert row.object is not None
    out = {}
    for stage in (Stage.TTIR, Stage.TTGIR, Stage.LLIR, Stage.AMDGCN, Stage.PTX):
        text = OBJECTS.text(row.object.path, stage.value)
        if text is not None:
            out[stage] = text
    return out


def _survey(rows: tuple[Row, ...], label: str) -> Survey:
    targets = tuple(dict.fromkeys(r.target for r in rows))
    return Survey(commit=None, label=label, targets=targets, toolchain={}, rows=rows)


def stage_surveys() -> tuple[Survey, Survey]:
    """Every case's builds made the first way, and the second way, each a survey (their toolchains alike:
    a comparison marks the rows by their figures)."""
    cases = stage_cases()
    return _survey(tuple(c.before for c in cases), "before"), _survey(tuple(c.after for c in cases), "after")


def stage_comparison() -> Comparison:
    """:func:`stage_surveys` compared."""
    return compare(*stage_surveys())
