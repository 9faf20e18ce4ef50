"""The copies of each key in flight: one, unless idle workers help with it at the survey's tail
(:mod:`.schedule`), each copy compiling the launches no other compiles and reading the others' results; the key's
rows are merged from every copy once the last ends."""

from __future__ import annotations

from ..model.keys import Key
from ..model.results import Row

KeyId = tuple[str, str]  # (key id, target): a key of a survey


def key_id(key: Key) -> KeyId:
    """``key``'s identity within a survey."""
    return key.id, key.target


class KeyCopies:
    """The copies of each key in flight (workers surveying it side by side: one, unless idle ones help with
    it at the tail) and the rows of those that ended; a key is done when its last copy ends, its rows merged
    from them (:func:`merged_copies`). Counts the keys shared and the launches helpers compiled
    (``keys_shared``, ``launches_shared``)."""

    def __init__(self) -> None:
        self.out_now: dict[KeyId, int] = {}
        self.rows: dict[KeyId, list[list[Row]]] = {}
        # Who took a copy of each key in flight, by id, kept alive while the key is, so that no id is reused
        # meanwhile.
        self.carriers: dict[KeyId, dict[int, object]] = {}
        self.all_compiled: set[KeyId] = set()  # keys in flight of which a copy has compiled every launch
        self.keys_shared = 0
        self.launches_shared = 0

    def sent(self, key: Key, carrier: object) -> None:
        """A copy of ``key`` is out, on ``carrier`` (a worker)."""
        ident = key_id(key)
        self.out_now[ident] = self.out_now.get(ident, 0) + 1
        self.carriers.setdefault(ident, {})[id(carrier)] = carrier

    def compiled(self, key: Key) -> None:
        """A copy of ``key`` has every launch compiled (by itself, or found compiled by another copy)."""
        if key_id(key) in self.out_now:
            self.all_compiled.add(key_id(key))

    def out(self, key: Key) -> int:
        """The copies of ``key`` out now."""
        return self.out_now.get(key_id(key), 0)

    def may_help(self, key: Key, carrier: object) -> bool:
        """Whether ``carrier`` may take another copy of ``key``: not when it took one already (that copy
        compiled every launch it could take, and waited for the rest), nor once any copy has compiled every
        launch (none is left to take). A copy ended early would otherwise be sent again at once, over and
        over while the key's slowest launch compiles elsewhere, each copy running the kind body again."""
        ident = key_id(key)
        return ident not in self.all_compiled and id(carrier) not in self.carriers.get(ident, {})

    def ended(self, key: Key, rows: list[Row] | None = None) -> tuple[bool, list[Row] | None]:
        """A copy of ``key`` ended with ``rows`` (None: lost). (True, the key's merged rows) when it was the
        last and some copy left rows; (True, None) when it was the last and none did (the caller decides:
        an error, or the key again); (False, None) while another copy is out."""
        ident = key_id(key)
        self.out_now[ident] -= 1
        if rows is not None:
            self.rows.setdefault(ident, []).append(rows)
        if self.out_now[ident] > 0:
            return False, None
        del self.out_now[ident]
        self.carriers.pop(ident, None)
        self.all_compiled.discard(ident)
        got = self.rows.pop(ident, None)
        if got is None:
            return True, None
        merged, shared = merged_copies(got)
        if len(got) > 1:
            self.keys_shared += 1
            self.launches_shared += shared
        return True, merged


def merged_copies(outcomes: list[list[Row]]) -> tuple[list[Row], int]:
    """One key's rows from the copies of it that workers surveyed side by side (one copy: its rows), and
    how many launches came from another copy. The first copy's rows that built (the first copy's
    otherwise), each launch that copy found compiled by another replaced by that other copy's row: the
    rows of one worker that compiled them all."""
    built = [rows for rows in outcomes if any(r.kernel is not None for r in rows)] or outcomes
    base = built[0]
    if len(built) == 1:
        return base, 0
    compiled: dict[tuple[int, str | None], Row] = {
        (r.launch, r.triton_hash): r for rows in built[1:] for r in rows if not r.reused and r.triton_hash}
    merged = [compiled.get((r.launch, r.triton_hash), r) if r.reused else r for r in base]
    return merged, sum(1 for old, new in zip(base, merged) if new is not old)
