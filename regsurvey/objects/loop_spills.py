"""Spills by loop depth: each spill store and reload of a kernel's machine code, placed in the natural loops
of the code's own control-flow graph (:mod:`regsurvey.objects.loops`).

AMD: the blocks and branches of the ``amdgcn`` text (:mod:`regsurvey.objects.amdgcn`), the spills LLVM marks
there (:mod:`regsurvey.objects.amd_spills`: scratch, VGPR to AGPR, SGPR to VGPR lanes). NVIDIA: the blocks
and branches of ``nvdisasm -c`` (:mod:`regsurvey.objects.sass`), the spills its ``STL`` and ``LDL``
(counted where the NVIDIA reader reads them: :func:`regsurvey.objects.nvidia_object.sass_loop_spills`).

A spill in a loop runs on every trip; one outside runs once. The survey's figures (``loop_spill_ops``,
``loop_spill_depth``) are :attr:`LoopSpills.in_loops` and :attr:`LoopSpills.deepest`; the register pressure
keeps each instruction's depth and each loop's source line (:mod:`regsurvey.pressure`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .amd_spills import spill_accesses
from .amdgcn import Function, parse_functions
from .loops import LoopNest, loop_nest
from .sass import SassCode, local_access, read_sass


@dataclass(frozen=True)
class LoopSpan:
    """One loop, in instructions: where its header starts, the last instruction of each block whose back
    edge closes it, its depth (1: outermost), the loop it sits in (an index, None for an outermost one) and
    the instructions of its header and latch blocks (where the loop's own step, trip test and branch are)."""

    header: int
    latches: tuple[int, ...]
    depth: int
    parent: int | None
    control: tuple[int, ...] = ()


@dataclass(frozen=True)
class InstructionLoops:
    """The loops of a function's instructions: per instruction its depth and innermost loop (an index of
    ``loops``, None outside any); ``unresolved``: jumps whose destination the CFG could not follow (loops
    through them are not seen)."""

    depth: tuple[int, ...]
    innermost: tuple[int | None, ...]
    loops: tuple[LoopSpan, ...]
    unresolved: int = 0


@dataclass(frozen=True)
class LoopSpills:
    """Spill instructions per loop depth: ``stores[d]`` and ``reloads[d]`` at depth ``d`` (0: in no loop)."""

    stores: tuple[int, ...]
    reloads: tuple[int, ...]

    @property
    def in_loops(self) -> int:
        """Spill stores and reloads inside any loop: the figure ``loop_spill_ops``."""
        return sum(self.stores[1:]) + sum(self.reloads[1:])

    @property
    def deepest(self) -> int:
        """The deepest loop depth that holds a spill instruction (0: none in a loop): ``loop_spill_depth``."""
        return max((d for d in range(1, len(self.stores)) if self.stores[d] or self.reloads[d]), default=0)


NO_LOOP_SPILLS = LoopSpills((0,), (0,))


def count_by_depth(kinds: list[str | None], depth: tuple[int, ...] | list[int]) -> LoopSpills:
    """Spill stores and reloads per depth, from each instruction's spill kind (``store``, ``reload`` or None)
    and depth."""
    size = max(depth, default=0) + 1
    stores, reloads = [0] * size, [0] * size
    for kind, d in zip(kinds, depth):
        if kind == "store":
            stores[d] += 1
        elif kind == "reload":
            reloads[d] += 1
    return LoopSpills(tuple(stores), tuple(reloads))


# -- AMD ----------------------------------------------------------------------------------------------

def amd_function_loops(function: Function) -> InstructionLoops:
    """The loops of an AMDGCN function (:func:`~regsurvey.objects.amdgcn.parse_functions`), per instruction."""
    nest = loop_nest([block.successors for block in function.blocks])
    first: list[int] = []
    position = 0
    for block in function.blocks:
        first.append(position)
        position += len(block.instructions)
    return _per_instruction(nest, first, [len(b.instructions) for b in function.blocks], function.unresolved_jumps)


def amd_loop_spills(text: str) -> LoopSpills:
    """The spill instructions of the kernel in ``text`` (Triton's ``amdgcn``) per loop depth. The spills are
    those LLVM's comments mark (:mod:`regsurvey.objects.amd_spills`); a text without a function has none."""
    functions = [f for f in parse_functions(text) if f.instructions]
    if not functions:
        return NO_LOOP_SPILLS
    function = functions[0]
    accesses = spill_accesses(function, text.splitlines())
    if not any(accesses):
        return NO_LOOP_SPILLS
    loops = amd_function_loops(function)
    return count_by_depth([a[0] if a else None for a in accesses], loops.depth)


# -- NVIDIA ---------------------------------------------------------------------------------------------

def sass_loops(code: SassCode) -> InstructionLoops:
    """The loops of SASS (:func:`~regsurvey.objects.sass.read_sass`), per instruction."""
    nest = loop_nest(code.successors)
    ends = [*code.starts[1:], len(code.texts)]
    return _per_instruction(nest, code.starts, [end - start for start, end in zip(code.starts, ends)],
                            code.unresolved)


def sass_loop_spills(sass: str) -> LoopSpills:
    """The ``STL`` and ``LDL`` instructions of ``sass`` (``nvdisasm -c``) per loop depth of its CFG."""
    code = read_sass(sass)
    kinds: list[str | None] = []
    for text in code.texts:
        access = local_access(text)
        kinds.append(None if access is None else "store" if access[0] == "STL" else "reload")
    if not any(kinds):
        return NO_LOOP_SPILLS
    return count_by_depth(kinds, sass_loops(code).depth)


def _per_instruction(nest: LoopNest, first: list[int], sizes: list[int], unresolved: int) -> InstructionLoops:
    depth: list[int] = []
    innermost: list[int | None] = []
    for block, size in enumerate(sizes):
        depth.extend([nest.depth[block]] * size)
        innermost.extend([nest.innermost[block]] * size)
    last = len(depth) - 1
    spans = tuple(LoopSpan(first[loop.header], tuple(min(first[latch] + max(sizes[latch], 1) - 1, last)
                                                     for latch in loop.latches), loop.depth, loop.parent,
                           tuple(i for block in sorted({loop.header, *loop.latches})
                                 for i in range(first[block], first[block] + sizes[block])))
                  for loop in nest.loops)
    return InstructionLoops(tuple(depth), tuple(innermost), spans, unresolved)
