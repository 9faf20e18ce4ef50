"""The Markdown of `regsurvey check`: the verdict, problems per rule, what the baseline allows and why,
then the comparison's own section."""

from __future__ import annotations

from regsurvey.check.baseline import Baseline, parse_baseline
from regsurvey.check.gate import judge
from regsurvey.diff.core import compare
from regsurvey.model.results import Survey
from regsurvey.output.formats import get_format
from regsurvey.output.markdown import format_gate

from ..layer_survey import edited
from ..lint_surveys import clean_and_mutated


def test_failed_gate() -> None:
    base, head = clean_and_mutated()
    comparison = compare(base, head)
    text = format_gate(judge(comparison, Baseline()))
    assert text.splitlines()[:6] == [
        "### regsurvey check failed, 2 problems: `HEAD` (bbbbbbbbbb) against `main` (aaaaaaaaaa)",
        "",
        "**miscompile suspect** (`regsurvey/kernarg-never-read`)",
        "- buffers/w8 on gfx950 (many_buffers_kernel): kernel argument out_ptr (#32, offset 256) loaded and "
        "never read, though the source uses it (a miscompile suspect)",
        "- gemm/w2 on gfx950 (matmul_kernel): kernel argument stride_cm (#8, offset 44) loaded and never read, "
        "though the source uses it (a miscompile suspect)",
        "",
    ]
    assert text.endswith(get_format("markdown").format(comparison))


def test_passed_gate_lists_what_the_baseline_allows(layer: Survey) -> None:
    head = edited(layer, {("proj/tp4/w2", "gfx950"): {"vgpr": 130, "vgpr_spill": 6, "scratch_bytes": 24,
                                                      "occupancy": 3}},
                  commit="b" * 40, label="HEAD (bbbbbbbbbb)")
    baseline = parse_baseline('''
[[allow]]
key = "proj/*"
vgpr_spill = 8
occupancy = 3
reason = "proj <b>unrolled</b> on purpose"
''', "/repo/regsurvey.baseline.toml")
    text = format_gate(judge(compare(layer, head), baseline))
    assert text.splitlines()[:7] == [
        "### regsurvey check passed: `HEAD` (bbbbbbbbbb) against the working tree",
        "",
        "Baseline: `regsurvey.baseline.toml` (1 entry).",
        "",
        "**allowed by the baseline**",
        "- proj/tp4/w2 on gfx950 (scale_rows): VGPR spills 0 → 6, scratch 0 → 24 B, occupancy 8 → 3 waves/SIMD, "
        "by entry 1 (key \"proj/\\*\"): proj &lt;b&gt;unrolled&lt;/b&gt; on purpose",
        "",
    ]
