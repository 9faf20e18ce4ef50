"""Tables that fit the terminal: every table a command prints (``run``, ``diff``, ``stack``, ``lint``) is
laid out here for a width (80, 120, 200 columns ...), as git log --stat, ruff and bloaty fit theirs.

A table has three kinds of column:

- a *name* column (key, target, kernel, commit) says which row it is: never left out, folded onto more
  lines (after a ``/``, ``_``, ``-`` or a blank where it can) rather than cut;
- a *figure* column holds a number or a short change (``38 → 64 (+26)``): as wide as its widest cell,
  never wrapped or cut; its header wraps between words, never inside one. A figure the command can do
  without (``leave_out``: restating another, or no cost) is left out when the width runs short, and the
  table says so under itself;
- a *text* column (a change, a commit's subject) wraps between words, or between its items, in what width
  is left; below its ``min_width`` it moves under the row (``header: text``).

What a row says beside its figures (an error, a skip reason, what a launcher said) is a line of its own
under the row, indented and wrapped to the width: in a column it would widen that column for every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

NAME, FIGURE, TEXT = "name", "figure", "text"
GAP = 2  # blanks between two columns (between two figures: the grid's ``figure_gap``)
UNDER = 4  # the indent of the lines under a row
_FOLD_AFTER = "/_-.,:]"  # where a name folds when it has no blank to break at
_NAME_FLOOR = 12  # the narrowest a name folds to on a terminal too narrow for anything else

Cell = Text | str | Sequence[Text | str]  # a sequence: a text column's items, kept whole where they fit


@dataclass(frozen=True)
class Column:
    """One column: its header, its kind (:data:`NAME`, :data:`FIGURE` or :data:`TEXT`), how its cells
    stand, the narrowest it may get (names, texts), for a figure whether the table may leave it out when
    the width runs short (the higher ``leave_out``, the sooner; None: never) and whether it goes before a
    name folds below its ``min_width`` (``spare``: it restates another figure; else only where the names
    folded to their floor still leave too little), and for a text whether its line under the row starts
    with its header."""

    header: str
    role: str = FIGURE
    justify: str = "left"
    min_width: int = 0
    leave_out: int | None = None
    spare: bool = False
    labelled_under: bool = True  # a text column said under the row: after its header (``why: ...``)


@dataclass(frozen=True)
class _Plan:
    shown: tuple[int, ...]  # columns in the row, in order
    widths: dict[int, int]
    under: tuple[int, ...]  # text columns said under the row instead
    left_out: tuple[int, ...]  # figures not shown


def _text(value: Text | str) -> Text:
    text = value.copy() if isinstance(value, Text) else Text(value)
    if "\n" in text.plain or "\t" in text.plain:  # a cell is one line: a stray newline would break the row
        text = Text(" ".join(text.plain.split()), style=text.style)
    return text


def _items(cell: Cell) -> list[Text]:
    if isinstance(cell, (str, Text)):
        return [_text(cell)] if len(cell) else []
    return [_text(item) for item in cell if len(item)]


def _joined(items: list[Text]) -> Text:
    return Text(", ").join(items)


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def break_text(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` characters: broken at a blank where there is one within
    reach, else after a ``/``, ``_``, ``-`` ... (a key, a kernel's name), else folded."""
    width = max(1, width)
    plain = text.plain
    lines: list[Text] = []
    start = 0
    while len(plain) - start > width:
        window = plain[start:start + width + 1]  # a blank just past the end breaks there too
        blank = window.rfind(" ")
        if blank > len(window) - len(window.lstrip(" ")):  # not the indent the text starts with
            lines.append(text[start:start + blank])
            start += blank + 1
            while start < len(plain) and plain[start] == " ":
                start += 1
            continue
        after = max(window[:width].rfind(ch) for ch in _FOLD_AFTER)
        end = start + (after + 1 if after >= width // 3 else width)
        lines.append(text[start:end])
        start = end
    if start < len(plain) or not lines:
        lines.append(text[start:])
    for line in lines:
        line.rstrip()
    return lines


def hanging(text: Text, width: int, indent: int = 2) -> list[Text]:
    """A sentence in lines of at most ``width`` characters, those after its first indented by ``indent``
    (as ``- a summary line`` or ``made ...`` wraps under a table)."""
    first, *rest = break_text(text, width)
    if not rest:
        return [first]
    return [first, *(Text(" " * indent) + line for line in break_text(Text(" ").join(rest), width - indent))]


def _wrap_items(items: list[Text], width: int) -> list[Text]:
    """A text column's items, ``, ``-separated, a line holding as many whole items as fit; an item wider
    than the column broken as :func:`break_text` breaks it."""
    lines: list[Text] = []
    current: Text | None = None
    for k, item in enumerate(items):
        piece = item + Text(",") if k + 1 < len(items) else item
        if current is not None and len(current) + 1 + len(piece) <= width:
            current = current + Text(" ") + piece
            continue
        if current is not None:
            lines.append(current)
        *whole, current = break_text(piece, width)
        lines.extend(whole)
    if current is not None:
        lines.append(current)
    return lines


def _padded(text: Text, width: int, justify: str) -> Text:
    gap = " " * max(0, width - len(text))
    return Text(gap) + text if justify == "right" else text + Text(gap)


def _grow(widths: dict[int, int], columns: list[int], natural: dict[int, int], spare: int) -> int:
    """Give ``spare`` characters to ``columns``, the narrowest first, none past its natural width; what is
    left over."""
    while spare > 0:
        wanting = [i for i in columns if widths[i] < natural[i]]
        if not wanting:
            break
        narrowest = min(wanting, key=lambda i: (widths[i], i))
        widths[narrowest] += 1
        spare -= 1
    return spare


class Grid:
    """A table laid out for a width by :meth:`lines` (see the module's docstring): rows of cells, each
    row with the lines said under it, and lines closing the table (``footer``). Two figures stand
    ``figure_gap`` blanks apart: one is enough between numbers under one-word headers."""

    def __init__(self, columns: Sequence[Column], title: Text | str | None = None, figure_gap: int = GAP):
        self.columns = tuple(columns)
        self.figure_gap = figure_gap
        self.title = _text(title) if title is not None else None
        self._rows: list[tuple[list[list[Text]], list[Text]]] = []
        self.footer: list[Text] = []

    def add_row(self, *cells: Cell, under: Sequence[Text | str] = ()) -> None:
        """A row: a cell per column (a text column's cell may be a sequence of items), and the lines to
        say under it (errors, messages)."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self._rows.append(([_items(cell) for cell in cells], [_text(line) for line in under if len(line)]))

    def __len__(self) -> int:
        return len(self._rows)

    def _natural(self, i: int) -> int:
        column = self.columns[i]
        cells = [len(_joined(row[i])) for row, _ in self._rows]
        return max([len(column.header), *cells])

    def _least(self, i: int) -> int:
        column = self.columns[i]
        word = _longest_word(column.header)
        if column.role == FIGURE:
            return max([word, *(len(_joined(row[i])) for row, _ in self._rows)])
        return min(self._natural(i), max(column.min_width, word))

    def fits(self, width: int) -> bool:
        """Whether every name column fits ``width`` whole on one line beside every figure column at its
        narrowest, nothing left out (text columns may go under the rows)."""
        shown = [i for i, c in enumerate(self.columns) if c.role != TEXT]
        wide = [self._natural(i) if self.columns[i].role == NAME else self._least(i) for i in shown]
        return sum(wide) + self._gaps(shown) <= width

    def _gap(self, left: int, right: int) -> int:
        both = self.columns[left].role == FIGURE and self.columns[right].role == FIGURE
        return self.figure_gap if both else GAP

    def _gaps(self, shown: Sequence[int]) -> int:
        return sum(self._gap(a, b) for a, b in zip(shown, shown[1:]))

    def _plan(self, width: int) -> _Plan:
        least = {i: self._least(i) for i in range(len(self.columns))}
        natural = {i: max(self._natural(i), least[i]) for i in least}
        shown = list(least)
        under: list[int] = []
        left_out: list[int] = []

        def need(names: dict[int, int]) -> int:
            return sum(names[i] if self.columns[i].role == NAME else least[i] for i in shown) + self._gaps(shown)

        # A text column goes under the rows (the last first) rather than fold a name beside it; a spare
        # figure is left out (the least important first) rather than fold a name below its narrowest; any
        # other figure that may be, only where the names folded to the floor still leave too little.
        while need(natural) > width and any(self.columns[i].role == TEXT for i in shown):
            moved = [i for i in shown if self.columns[i].role == TEXT][-1]
            shown.remove(moved)
            under.insert(0, moved)
        floor = {i: min(least[i], _NAME_FLOOR) for i in least}
        for narrowest, spare_only in ((least, True), (floor, False)):
            while need(narrowest) > width:
                spare = [i for i in shown if self.columns[i].role == FIGURE and self.columns[i].leave_out is not None
                         and (self.columns[i].spare or not spare_only)]
                if not spare:
                    break
                gone = max(spare, key=lambda i: self.columns[i].leave_out or 0)
                shown.remove(gone)
                left_out.append(gone)
        widths = {i: least[i] for i in shown}
        spare_width = width - need(least)
        # Narrower than the names at their narrowest: they fold further where that makes the table fit
        # (else they stay readable, and a terminal narrower than the figures gets lines past its width).
        names = [i for i in shown if self.columns[i].role == NAME]
        if 0 > spare_width >= sum(floor[i] - widths[i] for i in names):
            while spare_width < 0:
                widest = max((i for i in names if widths[i] > floor[i]), key=lambda i: widths[i])
                widths[widest] -= 1
                spare_width += 1
        for role in (NAME, TEXT, FIGURE):  # a header wraps before a text does
            spare_width = _grow(widths, [i for i in shown if self.columns[i].role == role], natural, spare_width)
        return _Plan(tuple(shown), widths, tuple(under), tuple(left_out))

    def lines(self, width: int) -> list[Text]:
        """The table as lines of at most ``width`` characters: its title, the headers, each row and the
        lines under it, a line naming the figures left out, the footer."""
        plan = self._plan(width)
        out: list[Text] = []
        if self.title is not None:
            out.extend(break_text(self.title, width))
        out.extend(self._header(plan))
        for cells, said in self._rows:
            out.extend(self._row(plan, cells))
            for i in plan.under:
                if cells[i]:
                    label = Text(f"{self.columns[i].header}: " if self.columns[i].labelled_under else "")
                    out.extend(self._under(label + _joined(cells[i]), width))
            for line in said:
                out.extend(self._under(line, width))
        if plan.left_out:
            names = ", ".join(self.columns[i].header for i in sorted(plan.left_out))
            out.extend(break_text(Text(f"left out to fit {width} columns: {names}", style="dim"), width))
        for line in self.footer:
            out.extend(break_text(line, width))
        return out

    def _header(self, plan: _Plan) -> list[Text]:
        heads = [break_text(Text(self.columns[i].header, style="bold"), plan.widths[i]) for i in plan.shown]
        height = max((len(h) for h in heads), default=0)
        heads = [[Text("")] * (height - len(h)) + h for h in heads]  # headers stand on the first row
        return [self._line(plan, [h[k] for h in heads]) for k in range(height)]

    def _row(self, plan: _Plan, cells: list[list[Text]]) -> list[Text]:
        parts = []
        for i in plan.shown:
            role, items = self.columns[i].role, cells[i]
            if role == TEXT:
                parts.append(_wrap_items(items, plan.widths[i]))
            elif role == NAME:
                parts.append(break_text(_joined(items), plan.widths[i]))
            else:
                parts.append([_joined(items)])
        height = max((len(p) for p in parts), default=1)
        return [self._line(plan, [p[k] if k < len(p) else Text("") for p in parts]) for k in range(height)]

    def _line(self, plan: _Plan, pieces: list[Text]) -> Text:
        line = Text("")
        for k, (i, piece) in enumerate(zip(plan.shown, pieces)):
            if k:
                line.append(" " * self._gap(plan.shown[k - 1], i))
            line.append_text(_padded(piece, plan.widths[i], self.columns[i].justify))
        line.rstrip()
        return line

    @staticmethod
    def _under(text: Text, width: int) -> list[Text]:
        if text.no_wrap:  # said in one line, cut where the width ends
            text = text.copy()
            text.truncate(width - UNDER, overflow="ellipsis")
            return [Text(" " * UNDER) + text]
        return [Text(" " * UNDER) + line for line in break_text(text, width - UNDER)]


__all__ = ["FIGURE", "GAP", "NAME", "TEXT", "UNDER", "Cell", "Column", "Grid", "break_text", "hanging"]
