"""The GPU fidelity check as a test: runs only where a CUDA GPU is present (never in CI)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_survey_equals_real_launches_on_sample_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from .fidelity import main

    # A sample across kinds keeps the test short; `python tests/gpu/fidelity.py` checks every key.
    assert main(["--key", "*/w8*", "--out", str(tmp_path / "fidelity.json")]) == 0
