"""Key definitions: ids, order, and the errors a keys author gets."""

from __future__ import annotations

from pathlib import Path

import pytest

import regsurvey as rs
from regsurvey.keys.keyfiles import expand_keys
from regsurvey.model.targets import UnknownTargetError


def demo_matrix() -> rs.Matrix:
    m = rs.Matrix(targets=["gfx950", "sm90"], tp=[8, 4], width=[2, 4, 16], cache=["bf16", "e4m3"],
                  stop=[False, True], labels={"width": "w"})

    @m.kind(axes=["tp", "width"])
    def router(tp, width):  # type: ignore[no-untyped-def]
        pass

    @m.kind(axes=["tp", "width", "cache", "stop"])
    def mla_decode(tp, width, cache, stop):  # type: ignore[no-untyped-def]
        pass

    return m


def test_key_ids_are_readable() -> None:
    keys = demo_matrix().keys()
    ids = {k.id for k in keys}
    assert "router/tp8/w4" in ids and "mla_decode/tp4/w2/e4m3/stop" in ids
    assert "mla_decode/tp4/w2/bf16/nostop" in ids
    assert len(keys) == (2 * 3 + 2 * 3 * 2 * 2) * 2  # both targets


def test_keys_sort_naturally() -> None:
    m = demo_matrix()
    keys = expand_keys(list(m.kinds.values()), None)
    router = [(k.id, k.target) for k in keys if k.kind == "router"]
    assert router[:4] == [("router/tp4/w2", "gfx950"), ("router/tp4/w2", "sm90"),
                          ("router/tp4/w4", "gfx950"), ("router/tp4/w4", "sm90")]
    assert router[4][0] == "router/tp4/w16"  # numerically after w4, not alphabetically
    assert keys[0].kind == "router" and keys[-1].kind == "mla_decode"


def test_target_override() -> None:
    keys = demo_matrix().keys(targets=["gfx942"])
    assert {k.target for k in keys} == {"gfx942"}


def test_unknown_target_lists_the_known_ones() -> None:
    with pytest.raises(UnknownTargetError, match="known targets: gfx942, gfx950, gfx1100, gfx1151, gfx1201, gfx1250, "
                                                 "sm90, sm100, sm103, sm120"):
        rs.Matrix(targets=["gfx1030"], tp=[4])
    assert rs.get_target("MI355X").name == "gfx950" and rs.get_target("sm_90a").name == "sm90"


def test_kind_errors() -> None:
    m = rs.Matrix(targets=["sm90"], tp=[4])
    with pytest.raises(ValueError, match="uses axis 'width', which the matrix does not define"):
        m.kind(axes=["width"])(lambda width: None)
    with pytest.raises(ValueError, match="does not take axis parameter"):
        m.kind(axes=["tp"])(lambda other: None)
    with pytest.raises(ValueError, match="repeats a value"):
        rs.Matrix(targets=["sm90"], tp=[4, 4])


def test_kind_axes_default_to_parameters() -> None:
    m = rs.Matrix(targets=["sm90"], tp=[4, 8], width=[2])

    @m.kind()
    def q_b(tp):  # type: ignore[no-untyped-def]
        pass

    assert [k.id for k in m.keys()] == ["q_b/tp4", "q_b/tp8"]


def test_declared_targets_are_read_without_importing(tmp_path: Path) -> None:
    """The targets the keys files name literally, in the order named: a guess made before the keys
    are listed (workers for each start importing while the first lists them)."""
    from regsurvey.keys.keyfiles import declared_targets

    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "a.py").write_text("import no_such_module\nm = rs.Matrix(targets=['sm90', 'gfx950'], w=[1])\n")
    (keys / "b.py").write_text("m = rs.Matrix(targets=('gfx942', 'sm90'), w=[1])\n"
                               "@m.kind(targets=['sm_100'])\ndef k(w): pass\n")
    (keys / "_helpers.py").write_text("x = f(targets=COMPUTED)\n")  # skipped, as loading skips it
    assert declared_targets(keys) == ["sm90", "gfx950", "gfx942", "sm100"]
    # Anything an import alone could tell: no guess.
    for text in ("m = rs.Matrix(targets=TARGETS, w=[1])\n", "m = rs.Matrix(targets=['gfx9000'], w=[1])\n",
                 "def broken(:\n"):
        (keys / "c.py").write_text(text)
        assert declared_targets(keys) == []
    (keys / "c.py").unlink()
    (keys / "a.py").unlink()
    (keys / "b.py").write_text("m = rs.Matrix(w=[1])\n")
    assert declared_targets(keys) == []
