"""A frozen, hashable mapping of names to values: what the model's typed maps (:class:`~.figures.Figures`,
:class:`~.compile_time.StageTimes`) share. Equal to any mapping of the same items, a plain dict among them,
and hashed so (whatever the order of its items), immutable once made."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

V = TypeVar("V")


class FrozenMapping(Mapping[str, V]):
    """The items, kept in the order a subclass gives them (``_freeze``), which its JSON form keeps."""

    __slots__ = ("_hash", "_items")
    _items: dict[str, V]
    _hash: int | None

    def _freeze(self, items: dict[str, V]) -> None:
        """Set the items, once, from a subclass's ``__init__`` (after it has checked them)."""
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_hash", None)

    def to_json(self) -> dict[str, V]:
        """The JSON form: a plain dict, in the mapping's order."""
        return dict(self._items)

    def __getitem__(self, name: str) -> V:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        found = self._hash
        if found is None:  # order-free, as Mapping's equality is
            found = hash(frozenset(self._items.items()))
            object.__setattr__(self, "_hash", found)
        return found

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} are frozen: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} are frozen: cannot delete {name}")


__all__ = ["FrozenMapping"]
