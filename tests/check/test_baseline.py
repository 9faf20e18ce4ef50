"""The baseline file: what it allows, what makes it unusable (one line each), and how --update-baseline
rewrites it without losing what people wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.check.baseline import (
    Allowance,
    Baseline,
    BaselineError,
    CheckRules,
    load_baseline,
    parse_baseline,
    updated_baseline_text,
)

EXAMPLE = '''
# Accepted figures of the decode layer.
[check]
register_increase = 16

[[allow]]
key = "mla_decode/tp4/w8/*"      # the fp8 caches
target = "mi355x"
vgpr_spill = 64
sgpr_spill = 20
reason = "w8 fp8 attention: the 512-wide accumulator does not fit; tracked in #123"

[[allow]]
key = "attn/*"
kernel = "matmul"
occupancy = 6
reason = "bigger tiles trade a wave for fewer LDS round trips"
'''


def test_parse_the_documented_example() -> None:
    baseline = parse_baseline(EXAMPLE, "regsurvey.baseline.toml")
    assert baseline.found and baseline.rules == CheckRules(register_increase=16)
    first, second = baseline.allow
    assert (first.number, first.key, first.target, first.kernel) == (1, "mla_decode/tp4/w8/*", "gfx950", None)
    assert dict(first.figures) == {"vgpr_spill": 64, "sgpr_spill": 20}
    assert first.describe() == 'entry 1 (key "mla_decode/tp4/w8/*", target gfx950)'
    # Globs over key ids; the target by its canonical name; the kernel by glob.
    assert first.matches("mla_decode/tp4/w8/e4m3", "gfx950", "mla_decode_split_kernel")
    assert not first.matches("mla_decode/tp4/w8/e4m3", "gfx942", "mla_decode_split_kernel")
    assert not first.matches("mla_decode/tp8/w8/e4m3", "gfx950", "mla_decode_split_kernel")
    assert second.matches("attn/tp4/w2/bf16", "sm90", "matmul") and not second.matches("attn/tp4", "sm90", "scale")
    # Up to the value, for a figure worse when it grows; down to it, for occupancy.
    assert first.allows("vgpr_spill", 64) and not first.allows("vgpr_spill", 65)
    assert second.allows("occupancy", 6) and not second.allows("occupancy", 5)
    # A companion rides with its parent unless the entry names it: scratch goes with VGPR spills.
    assert first.allows("scratch_bytes", 256) and not first.allows("spill_load_bytes", 8)
    assert Allowance(1, "*", "r", {"vgpr_spill": 8, "scratch_bytes": 32}).allows("scratch_bytes", 32)
    assert not Allowance(1, "*", "r", {"vgpr_spill": 8, "scratch_bytes": 32}).allows("scratch_bytes", 36)
    assert baseline.allowance("mla_decode/tp4/w8/bf16", "gfx950", "k", "sgpr_spill", 19) is first
    assert baseline.allowance("mla_decode/tp4/w8/bf16", "gfx950", "k", "sgpr_spill", 21) is None
    assert baseline.limits("mla_decode/tp4/w8/bf16", "gfx950", "k", "sgpr_spill") == [(first, 20)]


def test_a_missing_file_is_the_defaults_unless_named(tmp_path: Path) -> None:
    path = tmp_path / "regsurvey.baseline.toml"
    assert load_baseline(path) == Baseline(path=path)
    assert Baseline().rules == CheckRules(newly_failing=True, lint_errors=True, spill_increase=True,
                                          occupancy_drop=True, register_increase=None)
    with pytest.raises(BaselineError, match=f"^{path}: no such baseline file$"):
        load_baseline(path, required=True)


@pytest.mark.parametrize(("text", "message"), [
    ('[[allow]]\nkey = "gemm/*"\nvgpr_spill = 4\n',
     'b.toml: [[allow]] entry 1 (key "gemm/*"): no reason: say why these figures are acceptable'),
    ('[[allow]]\nkey = "gemm/*"\nvgpr_spill = 4\nreason = "   "\n',
     'b.toml: [[allow]] entry 1 (key "gemm/*"): no reason: say why these figures are acceptable'),
    ('[[allow]]\nkey = "a"\nvgpr = 1\nreason = "ok"\n[[allow]]\nkey = "gemm/*"\nvgpr_spill = 4\n'
     'reason = "TODO: explain"\n',
     'b.toml: [[allow]] entry 2 (key "gemm/*"): the reason "TODO: explain" is a placeholder: say why these '
     'figures are acceptable before merging'),
    ('[[allow]]\nkey = "gemm/*"\nvgpr_spils = 4\nreason = "r"\n',
     "b.toml: [[allow]] entry 1 (key \"gemm/*\"): unknown figure 'vgpr_spils' (figures: vgpr_spill, "),
    ('[[allow]]\nkey = "gemm/*"\nvgpr_spill = -1\nreason = "r"\n',
     'b.toml: [[allow]] entry 1 (key "gemm/*"): vgpr_spill must be a non-negative integer, not -1'),
    ('[[allow]]\nkey = "gemm/*"\ntarget = "gfx1030"\nvgpr = 1\nreason = "r"\n',
     'b.toml: [[allow]] entry 1 (key "gemm/*"): unknown target'),
    ('[[allow]]\nkey = "gemm/*"\nreason = "r"\n',
     'b.toml: [[allow]] entry 1 (key "gemm/*"): allows no figure'),
    ('[[allow]]\nvgpr = 1\nreason = "r"\n', "b.toml: [[allow]] entry 1: no key"),
    ('[check]\nspill = false\n', "b.toml: [check]: unknown setting 'spill'"),
    ('[check]\nregister_increase = "8"\n', "b.toml: [check]: register_increase must be a non-negative integer"),
    ('[allow]\nkey = "x"\n', "b.toml: 'allow' must be [[allow]] tables"),
    ('[[allowed]]\nkey = "x"\n', "b.toml: unknown table or key 'allowed'"),
    ('[[allow]\nkey = "x"\n', "b.toml: not valid TOML ("),
])
def test_malformed_baselines_are_one_line(text: str, message: str) -> None:
    with pytest.raises(BaselineError) as caught:
        parse_baseline(text, "b.toml")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_update_creates_a_file() -> None:
    needed = [Allowance(0, "gemm/w2", "", {"spill_load_bytes": 72, "spill_store_bytes": 72}, "sm90"),
              Allowance(0, "attn/tp4/w2/bf16", "", {"occupancy": 6}, "gfx950", "matmul")]
    text = updated_baseline_text(None, needed, 'capped at 32 registers: "spills" accepted')
    assert text.startswith("# regsurvey check: figures this project accepts")
    assert text.endswith('''
[[allow]]
key = "gemm/w2"
target = "sm90"
spill_store_bytes = 72
spill_load_bytes = 72
reason = "capped at 32 registers: \\"spills\\" accepted"

[[allow]]
key = "attn/tp4/w2/bf16"
target = "gfx950"
kernel = "matmul"
occupancy = 6
reason = "capped at 32 registers: \\"spills\\" accepted"
''')
    first, second = parse_baseline(text).allow
    assert first.reason == 'capped at 32 registers: "spills" accepted' and dict(second.figures) == {"occupancy": 6}


def test_update_keeps_the_file_and_rewrites_the_same_build_in_place() -> None:
    text = EXAMPLE + '''
# The NVIDIA gemm.
[[allow]]
key = "gemm/w2"
target = "sm90"
spill_store_bytes = 16   # was 16 before the cap
regs = 40
reason = "older reason"

# Trailing comment that belongs to the next entry.
[[allow]]
key = "proj/*"
vgpr = 8
reason = "proj is tiny"
'''
    needed = [Allowance(0, "gemm/w2", "", {"spill_store_bytes": 72, "stack_bytes": 64}, "sm90"),
              Allowance(0, "attn/tp4/w2/bf16", "", {"occupancy": 5}, None, "matmul")]
    updated = updated_baseline_text(text, needed, "new reason")
    # Everything before the rewritten entry is kept byte for byte; so is everything after it.
    assert updated.startswith(EXAMPLE + "\n# The NVIDIA gemm.\n[[allow]]\n")
    assert '''key = "gemm/w2"
target = "sm90"
spill_store_bytes = 72
stack_bytes = 64
regs = 40
reason = "new reason"

# Trailing comment that belongs to the next entry.
[[allow]]
key = "proj/*"
vgpr = 8
reason = "proj is tiny"
''' in updated
    baseline = parse_baseline(updated)
    assert [a.key for a in baseline.allow] == ["mla_decode/tp4/w8/*", "attn/*", "gemm/w2", "proj/*", "attn/tp4/w2/bf16"]
    assert baseline.rules.register_increase == 16
    # A looser value never tightens: the existing allowance of 16 spill bytes became 72, not less.
    again = updated_baseline_text(updated, [Allowance(0, "gemm/w2", "", {"spill_store_bytes": 8}, "sm90")], "r2")
    assert dict(parse_baseline(again).allow[2].figures)["spill_store_bytes"] == 72


def test_update_refuses_a_placeholder_reason() -> None:
    with pytest.raises(BaselineError, match="placeholder"):
        updated_baseline_text(None, [Allowance(0, "k", "", {"vgpr": 1})], "TODO: explain")
