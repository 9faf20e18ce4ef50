"""The Markdown report: a PR's "Registers" section, with everything from kernels escaped."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from regsurvey.diff.core import compare, stack
from regsurvey.model.results import Survey
from regsurvey.output.formats import get_format
from regsurvey.output.markdown import code, escape

from ..layer_survey import edited

MALICIOUS = "</script><img src=x onerror=alert(1)> | `x` *y* [z](http://e)"
Readings = dict[tuple[str, str], dict[str, Any]]
SPILLS = ("vgpr_spill", "sgpr_spill", "scratch_bytes", "spill_store_bytes", "spill_load_bytes", "stack_bytes")


def test_escape_and_code() -> None:
    # Arrows are drawn by the report that shows a sentence, never rewritten here.
    assert escape(MALICIOUS + "\nnext -> line") == (
        "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* \\[z\\](http://e) next -&gt; line")
    assert escape("mla_decode _x_") == "mla_decode \\_x\\_"  # intraword underscores stay readable
    assert code("a|b") == "`a\\|b`" and code("x`y") == "``x`y``"


def test_comparison(layer: Survey, layer_readings: Readings) -> None:
    # The build's own figures are its second readings; the edit raises its VGPRs and costs it a wave.
    read = layer_readings[("attn/tp4/w2/bf16", "gfx950")]
    vgpr, waves = read["vgpr"], read["occupancy"]
    base = replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)")
    head = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr": vgpr + 26, "occupancy": waves - 1},
                          ("proj/tp8/w8", "sm90"): {"status": "error", "error": MALICIOUS}},
                  commit="b" * 40, label="HEAD (bbbbbbbbbb)")
    text = get_format("markdown").format(compare(base, head))
    assert text.splitlines()[:8] == [
        "### Registers: `main` (aaaaaaaaaa) → `HEAD` (bbbbbbbbbb)",
        "",
        "- breaks proj tp8 w8 on sm90: &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* "
        "\\[z\\](http://e)",
        f"- lowers occupancy of attn (matmul) tp4 w2 bf16 on gfx950 ({waves} → {waves - 1} waves/SIMD)",
        f"- raises VGPRs of attn (matmul) tp4 w2 bf16 on gfx950 ({vgpr} → {vgpr + 26})",
        "- 38 of 40 builds unchanged",
        "",
        "| | key | target | kernel | change |",
    ]
    assert (f"| **worse** | `attn/tp4/w2/bf16` | gfx950 | `matmul` | waves {waves} → {waves - 1} (-1), "
            f"VGPR {vgpr} → {vgpr + 26} (+26) |") in text
    assert ("| **newly failing** | `proj/tp8/w8` | sm90 | `scale_rows` | &lt;/script&gt;&lt;img src=x "
            "onerror=alert(1)&gt; \\| \\`x\\` \\*y\\* \\[z\\](http://e) |") in text
    assert "<img" not in text and "</script>" not in text
    # No build spills on either side (the edits touch no spill figure): every build's second reading.
    assert not any(read[name] for read in layer_readings.values() for name in SPILLS if name in read)
    assert text.rstrip().endswith("builds that spill 0 → 0</sub>")


def test_stack(layer: Survey, layer_readings: Readings) -> None:
    assert not any(read[name] for read in layer_readings.values() for name in SPILLS if name in read)  # 0 → 4
    second = edited(layer, {("attn/tp4/w2/bf16", "gfx950"): {"vgpr_spill": 4}}, commit="b" * 40, label="b")
    s = stack([replace(layer, commit="a" * 40, label="main (aaaaaaaaaa)"), second], ["spill | more"])
    text = get_format("markdown").format_stack(s)
    assert "| bbbbbbbbbb | spill \\| more | 24/24 | 1 | 0 | 0 | 0 | 0 | VGPR spills 0 → 4 | 0 |" in text
    assert "#### bbbbbbbbbb spill \\| more" in text and "#### The whole range" in text
