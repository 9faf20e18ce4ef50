"""How every report names a build (model/names.py): its key, its kernel, the kind body's name for the launch,
else the launch's index where its key launches that kernel (with that config) more than once, and the
autotune config. The names in every report of a real survey are tests/keys/test_launch_names.py's."""

from __future__ import annotations

from regsurvey.model.names import BuildName, build_name, build_names
from regsurvey.model.results import Row


def row(key: str, kernel: str | None, launch: int = 0, config: int | None = None, name: str | None = None,
        target: str = "gfx950") -> Row:
    ok = kernel is not None
    return Row(key=key, kind=key.split("/")[0], axes={}, target=target, kernel=kernel,
               status="ok" if ok else "error", error=None if ok else "ValueError: no", launch=launch,
               config=config, name=name)


def test_a_names_parts() -> None:
    down = BuildName("moe/tp8", "fused_moe_kernel", "down")
    assert (down.kernel_text, down.text, str(down)) == ("fused_moe_kernel [down]", "fused_moe_kernel [down]",
                                                        "moe/tp8 fused_moe_kernel [down]")
    tuned = BuildName("gemm/w2", "matmul", "launch 2", 0)
    assert (tuned.kernel_text, tuned.text, str(tuned)) == ("matmul [launch 2]", "matmul [launch 2, cfg 0]",
                                                           "gemm/w2 matmul [launch 2, cfg 0]")
    config = BuildName("axpy/w4", "axpy", config=1)
    assert (config.kernel_text, config.text) == ("axpy", "axpy [cfg 1]")
    # In a comparison, a config the base lists under another index (paired by what it builds: diff.core).
    moved = BuildName("axpy/w4", "axpy", config=2, base_config=0)
    assert (moved.kernel_text, moved.text, moved.label("->")) == ("axpy", "axpy [cfg 0 → 2]", "axpy [cfg 0 -> 2]")
    assert BuildName("axpy/w4", "axpy", config=2, base_config=2).text == "axpy [cfg 2]"
    own = BuildName("gemm/w8", None)  # the key's own row: its kind body raised
    assert (own.kernel_text, own.text, str(own)) == ("", "", "gemm/w8")


def test_a_launch_is_told_by_its_index_only_among_launches_of_its_kernel() -> None:
    assert build_name(row("gemm/w2", "matmul", launch=1)) == BuildName("gemm/w2", "matmul")
    assert build_name(row("gemm/w2", "matmul", launch=1), several=True) == BuildName("gemm/w2", "matmul", "launch 1")
    assert build_name(row("moe/tp8", "fused_moe_kernel", 1, name="down"), several=True).launch == "down"
    assert build_name(row("gemm/w8", None), several=True) == BuildName("gemm/w8", None)


def test_the_names_of_a_surveys_rows() -> None:
    rows = [row("moe/tp8", "fused_moe_kernel", 0, name="up"), row("moe/tp8", "fused_moe_kernel", 1, name="down"),
            row("gemm/w2", "matmul", 0), row("gemm/w2", "matmul", 1), row("gemm/w2", "scale", 2),
            row("axpy/w4", "axpy", 0, config=0), row("axpy/w4", "axpy", 1, config=1),
            row("gemm/w2", "matmul", 0, target="sm90"), row("gemm/w8", None)]
    names = {ref: str(name) for ref, name in build_names(rows).items()}
    assert names == {
        ("gfx950", "moe/tp8"): "moe/tp8 fused_moe_kernel [up]",
        ("gfx950", "moe/tp8#1"): "moe/tp8 fused_moe_kernel [down]",
        ("gfx950", "gemm/w2"): "gemm/w2 matmul [launch 0]",
        ("gfx950", "gemm/w2#1"): "gemm/w2 matmul [launch 1]",
        ("gfx950", "gemm/w2#2"): "gemm/w2 scale",  # launched once
        ("gfx950", "axpy/w4@cfg0"): "axpy/w4 axpy [cfg 0]",  # one launch per config
        ("gfx950", "axpy/w4#1@cfg1"): "axpy/w4 axpy [cfg 1]",
        ("sm90", "gemm/w2"): "gemm/w2 matmul",  # once on its target
        ("gfx950", "gemm/w8"): "gemm/w8",
    }
