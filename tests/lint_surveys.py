"""Surveys whose rows carry real kernarg-lint findings, for the comparison, report and gate tests.

A survey cannot produce a miscompile suspect on demand (the compiler does not lose arguments when
asked), so these rows are made from the lint's committed fixtures (``tests/fixtures/lint``, see its
``regenerate.py``): real Triton objects for gfx950 and textual mutations of their amdgcn that lose an
argument. Each row's resources are read from the fixture's real HSACO; its findings come from
:func:`regsurvey.lint.lint_amdgcn` on the fixture's text, with the base kernel's LLVM IR and argument
names, as a survey's row holds them (typed findings naming the row).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from regsurvey.compile.triton_facts import APPENDED_ARGS
from regsurvey.lint import lint_amdgcn
from regsurvey.model.findings import Finding
from regsurvey.model.results import Row, Survey
from regsurvey.model.targets import get_target
from regsurvey.objects.amd_object import read_hsaco

APPENDED = len(APPENDED_ARGS)  # Triton's scratch pointers, never reported by the lint

LINT_FIXTURES = Path(__file__).parent / "fixtures" / "lint"
MANIFEST = json.loads((LINT_FIXTURES / "manifest.json").read_text())
TOOLCHAIN = {"hip": {"triton": "3.9.0", "python": "3.11", "fp_fusion": True, "fp_fusion_env": None,
                     "amd_codegen_revision": "fixture"}}
# The kind and key each fixture's kernel stands for.
KEYS = {"many_buffers-gfx950": ("buffers", "buffers/w8", {"width": 8}),
        "matmul-gfx950": ("gemm", "gemm/w2", {"width": 2})}


def findings(text_file: str, base: str, *, with_ir: bool = True) -> tuple[Finding, ...]:
    """The lint's findings on fixture ``text_file`` (amdgcn of base kernel ``base`` or a mutant of it), as
    a survey row stores them (without the key)."""
    entry = MANIFEST["bases"][base]
    llir = (LINT_FIXTURES / f"{base}.llir").read_text() if with_ir else None
    found = lint_amdgcn((LINT_FIXTURES / text_file).read_text(), llir=llir, arg_names=entry["arg_names"],
                        appended_args=APPENDED)
    return tuple(found)


def fixture_row(base: str, lint: tuple[Finding, ...] | list[Finding] | None, **fields: Any) -> Row:
    """The row of base kernel ``base`` on gfx950: real resources, ``lint`` keyed by the row."""
    kind, key, axes = KEYS[base]
    binary = (LINT_FIXTURES / f"{base}.hsaco").read_bytes()
    resources = read_hsaco(binary, lds_bytes=0, num_warps=4, target=get_target("gfx950"))
    row = Row(key=key, kind=kind, axes=axes, target="gfx950", kernel=MANIFEST["bases"][base]["kernel"], status="ok",
              resources=resources, where="kernels/fixture.py:10", **fields)
    return replace(row, lint=None if lint is None else tuple(replace(f, key=row.row_id) for f in lint))


def lint_survey(rows: list[Row], commit: str, label: str) -> Survey:
    """A gfx950 survey of ``rows``."""
    return Survey(commit=commit, label=label, targets=("gfx950",), toolchain=TOOLCHAIN, rows=tuple(rows))


def clean_and_mutated() -> tuple[Survey, Survey]:
    """The base: both kernels as Triton built them, linted clean. The head: ``buffers`` lost ``out_ptr``
    (restore-removed), ``gemm`` lost ``stride_cm`` (use-redirected): two miscompile suspects."""
    buffers, gemm = "many_buffers-gfx950", "matmul-gfx950"
    base = lint_survey([fixture_row(buffers, findings(f"{buffers}.amdgcn", buffers)),
                        fixture_row(gemm, findings(f"{gemm}.amdgcn", gemm))], "a" * 40, "main (aaaaaaaaaa)")
    head = lint_survey([fixture_row(buffers, findings("restore-removed.amdgcn", buffers)),
                        fixture_row(gemm, findings("use-redirected.amdgcn", gemm))], "b" * 40, "HEAD (bbbbbbbbbb)")
    return base, head
