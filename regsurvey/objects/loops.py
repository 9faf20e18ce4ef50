"""Natural loops of a control-flow graph, and how deeply each block is nested in them.

The graph is the machine code's own (basic blocks and their successors, from the AMDGCN text or the SASS):
a loop is what a back edge makes, an edge ``latch -> header`` whose header dominates its latch; its body
is the header and every block that reaches the latch without passing the header. Back edges into one
header make one loop (as LLVM's LoopInfo has it: the ``; Loop Header: Depth=N`` comments of the AMDGCN
text come from there). A block's depth is the number of loops whose body holds it: 0 outside any, 1 in
a loop, 2 in a loop inside another. A cycle entered at more than one block (irreducible: no block of it
dominates the others) is no natural loop and counts for no depth; compilers of GPU code do not make
them from structured loops, and :attr:`LoopNest.irreducible` counts the edges that close one.

Dominators are Cooper, Harvey and Kennedy's iteration over the reverse postorder ("A Simple, Fast
Dominance Algorithm", 2001): a few passes on the graphs of real kernels (hundreds of blocks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Loop:
    """One natural loop: its header block, the blocks of its body (the header among them, nested loops'
    blocks too), the blocks whose back edges close it, its depth (1: outermost) and the loop it sits in
    (an index of :attr:`LoopNest.loops`, None for an outermost one)."""

    header: int
    body: frozenset[int]
    latches: tuple[int, ...]
    depth: int
    parent: int | None


@dataclass(frozen=True)
class LoopNest:
    """The natural loops of a graph, outer loops before the loops they hold, and per block its depth and its
    innermost loop (an index of ``loops``; None outside any and for a block the entry does not reach)."""

    loops: tuple[Loop, ...]
    depth: tuple[int, ...]
    innermost: tuple[int | None, ...]
    irreducible: int = 0  # retreating edges whose target does not dominate their source

    @property
    def deepest(self) -> int:
        """The deepest nesting of any block (0: no loop)."""
        return max(self.depth, default=0)


def loop_nest(successors: Sequence[Sequence[int]], entry: int = 0) -> LoopNest:
    """The natural loops of the graph whose node ``n`` goes to ``successors[n]``, entered at ``entry``.
    Nodes the entry does not reach belong to no loop (the trap loop ptxas leaves after ``EXIT``)."""
    count = len(successors)
    if count == 0:
        return LoopNest((), (), ())
    order = _postorder(successors, entry)
    idom = _dominators(successors, entry, order)
    position = {node: i for i, node in enumerate(order)}  # postorder number: a back edge climbs it
    by_header: dict[int, set[int]] = {}
    latches: dict[int, list[int]] = {}
    predecessors: list[list[int]] = [[] for _ in range(count)]
    irreducible = 0
    for node in order:
        for succ in successors[node]:
            predecessors[succ].append(node)
            if position[succ] < position[node]:
                continue  # a forward or cross edge
            if _dominates(idom, succ, node):
                by_header.setdefault(succ, set())
                latches.setdefault(succ, []).append(node)
            else:
                irreducible += 1
    for header, body in by_header.items():
        body.add(header)
        stack = [latch for latch in latches[header] if latch != header]
        while stack:
            node = stack.pop()
            if node in body:
                continue
            body.add(node)
            stack.extend(p for p in predecessors[node] if p in position and p not in body)
    # Outer loops first: a loop's body holds every loop nested in it, so larger bodies come first.
    headers = sorted(by_header, key=lambda h: (-len(by_header[h]), position[h]))
    loops: list[Loop] = []
    innermost: list[int | None] = [None] * count
    depth = [0] * count
    for index, header in enumerate(headers):
        body = by_header[header]
        parent = next((k for k in range(index - 1, -1, -1) if header in loops[k].body), None)
        level = loops[parent].depth + 1 if parent is not None else 1
        loops.append(Loop(header, frozenset(body), tuple(sorted(latches[header])), level, parent))
        for node in body:
            depth[node] += 1
            innermost[node] = index  # inner loops come later: the last to hold a block is its innermost
    return LoopNest(tuple(loops), tuple(depth), tuple(innermost), irreducible)


def _postorder(successors: Sequence[Sequence[int]], entry: int) -> list[int]:
    """The nodes the entry reaches, in depth-first postorder (iterative: a kernel has thousands of blocks)."""
    seen = {entry}
    order: list[int] = []
    stack: list[tuple[int, int]] = [(entry, 0)]
    while stack:
        node, next_child = stack[-1]
        children = successors[node]
        if next_child < len(children):
            stack[-1] = (node, next_child + 1)
            child = children[next_child]
            if child not in seen:
                seen.add(child)
                stack.append((child, 0))
        else:
            stack.pop()
            order.append(node)
    return order


def _dominators(successors: Sequence[Sequence[int]], entry: int, order: list[int]) -> dict[int, int]:
    """Each reached node's immediate dominator (the entry's is itself)."""
    position = {node: i for i, node in enumerate(order)}
    predecessors: dict[int, list[int]] = {node: [] for node in order}
    for node in order:
        for succ in successors[node]:
            predecessors[succ].append(node)
    idom = {entry: entry}
    changed = True
    while changed:
        changed = False
        for node in reversed(order):  # reverse postorder
            if node == entry:
                continue
            new = None
            for pred in predecessors[node]:
                if pred not in idom:
                    continue
                new = pred if new is None else _intersect(idom, position, pred, new)
            if new is not None and idom.get(node) != new:
                idom[node] = new
                changed = True
    return idom


def _intersect(idom: dict[int, int], position: dict[int, int], a: int, b: int) -> int:
    while a != b:
        while position[a] < position[b]:
            a = idom[a]
        while position[b] < position[a]:
            b = idom[b]
    return a


def _dominates(idom: dict[int, int], a: int, b: int) -> bool:
    """Whether ``a`` dominates ``b`` (every path from the entry to ``b`` passes ``a``)."""
    while True:
        if b == a:
            return True
        up = idom[b]
        if up == b:
            return False
        b = up
