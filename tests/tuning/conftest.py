"""The survey the prune tests start from: torchao's blockwise fp8 GEMM (48 autotune configs) and its
activation quantizer on gfx950, two keys, surveyed with the real toolchain and committed
(``tests/fixtures/prune/torchao_gfx950.json``). Regenerate it in a copy of ``tests/realworld/torchao``
(a git repository of its own) with torchao installed::

    regsurvey run --target gfx950 --key 'fp8_linear/q_a/*4' --format json > torchao_gfx950.json
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.model.results import Survey

from ..conftest import FIXTURES


@pytest.fixture(scope="session")
def torchao_survey() -> Survey:
    """The committed gfx950 survey of torchao's two q_a keys (4 and 64 tokens)."""
    return Survey.from_json((FIXTURES / "prune" / "torchao_gfx950.json").read_text())


def fixture_path() -> Path:
    """Where the committed survey lies (``regsurvey prune --commit FILE`` reads it)."""
    return FIXTURES / "prune" / "torchao_gfx950.json"
