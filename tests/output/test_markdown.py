"""The Markdown report: a PR's "Registers" section, with everything from kernels escaped."""

from __future__ import annotations

from dataclasses import replace

from regsurvey.diff.core import compare, stack
from regsurvey.model.results import Survey
from regsurvey.output.formats import get_format
from regsurvey.output.markdown import code, escape

from ..layer_survey import edited

MALICIOUS = "</script><img src=x onerror=alert(1)> | `x` *y* [z](http://e)"


def test_escape_and_code() -> None:
    # Arrows are drawn by the report that shows a sentence, never rewritten here.
    assert escape(MALICIOUS + "\nnext -> line") == (
        "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* \\[z\\](http://e) next -&gt; line")
    assert escape("mla_decode _x_") == "mla_decode \\_x\\_"  # intraword underscores stay readable
    assert code("a|b") == "`a\\|b`" and code("x`y") == "``x`y``"


def test_comparison(layer: Survey) -> None:
    base = replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)")
    head = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr": 64, "occupancy": 6},
                          ("proj/tp8/w8", "sm90"): {"status": "error", "error": MALICIOUS}},
                  commit="b" * 40, label="HEAD (bbbbbbbbbb)")
    text = get_format("markdown").format(compare(base, head))
    assert text.splitlines()[:8] == [
        "### Registers: `main` (aaaaaaaaaa) → `HEAD` (bbbbbbbbbb)",
        "",
        "- breaks proj tp8 w8 on sm90: &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* "
        "\\[z\\](http://e)",
        "- lowers occupancy of attn (matmul) tp4 w2 bf16 on gfx950 (7 → 6 waves/SIMD)",
        "- raises VGPRs of attn (matmul) tp4 w2 bf16 on gfx950 (38 → 64)",
        "- 38 of 40 builds unchanged",
        "",
        "| | key | target | kernel | change |",
    ]
    assert "| **worse** | `attn/tp4/w2/bf16` | gfx950 | `matmul` | waves 7 → 6 (-1), VGPR 38 → 64 (+26) |" in text
    assert ("| **newly failing** | `proj/tp8/w8` | sm90 | `scale_rows` | &lt;/script&gt;&lt;img src=x "
            "onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* \\[z\\](http://e) |") in text
    assert "<img" not in text and "</script>" not in text
    assert text.rstrip().endswith("builds that spill 0 → 0</sub>")


def test_stack(layer: Survey) -> None:
    second = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr_spill": 4}}, commit="b" * 40, label="b")
    s = stack([replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)"), second], ["spill | more"])
    text = get_format("markdown").format_stack(s)
    assert "| bbbbbbbbbb | spill \\| more | 24/24 | 1 | 0 | 0 | 0 | 0 | VGPR spills 0 → 4 | 0 |" in text
    assert "#### bbbbbbbbbb spill \\| more" in text and "#### The whole range" in text
