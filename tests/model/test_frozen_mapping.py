"""model/frozen_mapping.py: the frozen, hashable mapping the model's typed maps share (Figures, StageTimes)."""

from __future__ import annotations

import pickle

import pytest

from regsurvey.model.compile_time import StageTimes
from regsurvey.model.figures import NVIDIA, Figures


def test_equal_maps_hash_alike_whatever_their_order() -> None:
    # Mapping's equality ignores order; so must the hash (StageTimes once hashed its items in order).
    ran = StageTimes({"ttir": 0.5, "llir": 1.25})
    other_order = StageTimes({"llir": 1.25, "ttir": 0.5})
    assert ran == other_order == {"ttir": 0.5, "llir": 1.25} and hash(ran) == hash(other_order)
    assert list(ran) == ["ttir", "llir"] and ran.to_json() == {"ttir": 0.5, "llir": 1.25}  # order kept
    assert len({ran, other_order}) == 1


def test_frozen_and_pickled_whole() -> None:
    figures = Figures(NVIDIA, {"regs": 40})
    for made in (figures, StageTimes({"ptxas": 0.25})):
        kind = type(made).__name__
        with pytest.raises(AttributeError, match=f"^{kind} are frozen: cannot set x$"):
            made.x = 1  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match=f"^{kind} are frozen: cannot delete _items$"):
            del made._items
        again = pickle.loads(pickle.dumps(made))
        assert again == made and type(again) is type(made) and hash(again) == hash(made)
    assert pickle.loads(pickle.dumps(figures)).vendor == NVIDIA
