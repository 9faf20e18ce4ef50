"""A deterministic mutation fuzzer (issue #12, "the campaign"): no dependency beyond ``random``.

Every mutation is first drawn as a small, replayable *operation* (a tuple) and then applied, so a failing
input is kept as its seed object's name and the operations that made it, never as a blob. The same
``random.Random`` seed always draws the same operations.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Sequence

Op = tuple  # ("flip", offset, mask), ("line_del", index) ...: see apply_bytes and apply_text

_INTERESTING = (0, 1, 0x7F, 0x80, 0xFF)
_INTERESTING_WORDS = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 64, 4096)
_NUMBER = re.compile(r"\d+")


def _hot_offset(rng: random.Random, data: bytes) -> int:
    """An offset to alter: anywhere, or (half the time) in the ELF header or the section header table,
    where a change reaches the reader's bookkeeping rather than code bytes nobody reads."""
    size = len(data)
    choice = rng.random()
    if choice < 0.25:
        return rng.randrange(min(64, size))
    if choice < 0.5 and size >= 64 and data[:4] == b"\x7fELF":
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        if shoff < size:
            return rng.randrange(shoff, size)
    return rng.randrange(size)


def draw_bytes_op(rng: random.Random, data: bytes) -> Op:
    """One mutation of ``data``, drawn but not applied."""
    size = len(data)
    if size == 0:
        return ("insert", 0, bytes([rng.randrange(256)]))
    kind = rng.choice(("flip", "flip", "byte", "byte", "word", "truncate", "dup", "delete"))
    if kind == "flip":
        return ("flip", _hot_offset(rng, data), 1 << rng.randrange(8))
    if kind == "byte":
        value = rng.choice(_INTERESTING) if rng.random() < 0.5 else rng.randrange(256)
        return ("set", _hot_offset(rng, data), bytes([value]))
    if kind == "word":
        width = rng.choice((2, 4, 8))
        value = rng.choice(_INTERESTING_WORDS) & ((1 << (8 * width)) - 1)
        offset = min(_hot_offset(rng, data), max(0, size - width))
        return ("set", offset, value.to_bytes(width, "little"))
    if kind == "truncate":
        return ("truncate", rng.randrange(size))
    start = rng.randrange(size)
    end = min(size, start + rng.choice((1, 4, 16, 64, 256, 1024)))
    if kind == "dup":
        return ("dup", start, end, rng.randrange(size + 1))
    return ("delete", start, end)


def apply_bytes(data: bytes, ops: Sequence[Op]) -> bytes:
    """``data`` with the operations applied in order (offsets past the end are clamped)."""
    out = bytearray(data)
    for op in ops:
        kind = op[0]
        if kind == "flip":
            if out:
                out[min(op[1], len(out) - 1)] ^= op[2]
        elif kind == "set":
            at = min(op[1], len(out))
            out[at:at + len(op[2])] = op[2]
        elif kind == "insert":
            out[op[1]:op[1]] = op[2]
        elif kind == "truncate":
            del out[op[1]:]
        elif kind == "dup":
            out[op[3]:op[3]] = out[op[1]:op[2]]
        elif kind == "delete":
            del out[op[1]:op[2]]
        else:
            raise AssertionError(f"unknown bytes operation {op!r}")
    return bytes(out)


def draw_text_op(rng: random.Random, text: str) -> Op:
    """One mutation of ``text`` (line-wise, or one number in a line), drawn but not applied."""
    lines = text.split("\n")
    n = len(lines)
    kind = rng.choice(("line_del", "line_dup", "line_swap", "number", "number", "number", "truncate", "chunk_del"))
    if kind == "line_del":
        return ("line_del", rng.randrange(n))
    if kind == "line_dup":
        return ("line_dup", rng.randrange(n), rng.randrange(n + 1))
    if kind == "line_swap":
        return ("line_swap", rng.randrange(n), rng.randrange(n))
    if kind == "truncate":
        return ("truncate", rng.randrange(len(text) + 1))
    if kind == "chunk_del":
        start = rng.randrange(n)
        return ("line_del_range", start, min(n, start + rng.choice((2, 5, 20, 100))))
    # A number in a line that has one: a register index, an offset, a count, a digit of a hex value.
    for _ in range(20):
        index = rng.randrange(n)
        numbers = list(_NUMBER.finditer(lines[index]))
        if numbers:
            m = rng.choice(numbers)
            value = int(m[0])
            new = rng.choice((0, 1, value + 1, max(0, value - 1), value * 2, value + 256, 255, 65535, 2**31,
                              2**64, rng.randrange(1000)))
            if rng.random() < 0.15:
                return ("number", index, m.start(), m.end(), "")  # a number gone: "s[:3]", "0x"
            if rng.random() < 0.1:
                return ("number", index, m.start(), m.end(), "zz")  # not a number at all
            return ("number", index, m.start(), m.end(), str(new))
    return ("line_del", rng.randrange(n))


def apply_text(text: str, ops: Sequence[Op]) -> str:
    """``text`` with the operations applied in order (indices past the end are clamped or skipped)."""
    for op in ops:
        kind = op[0]
        if kind == "truncate":
            text = text[:op[1]]
            continue
        lines = text.split("\n")
        n = len(lines)
        if kind == "line_del":
            if op[1] < n:
                del lines[op[1]]
        elif kind == "line_del_range":
            del lines[op[1]:op[2]]
        elif kind == "line_dup":
            if op[1] < n:
                lines.insert(min(op[2], n), lines[op[1]])
        elif kind == "line_swap":
            if op[1] < n and op[2] < n:
                lines[op[1]], lines[op[2]] = lines[op[2]], lines[op[1]]
        elif kind == "number":
            if op[1] < n:
                line = lines[op[1]]
                lines[op[1]] = line[:op[2]] + op[4] + line[op[3]:]
        else:
            raise AssertionError(f"unknown text operation {op!r}")
        text = "\n".join(lines)
    return text


def draw(rng: random.Random, seed: bytes | str) -> list[Op]:
    """One to three mutations for ``seed`` (bytes or text), each drawn on the result of the ones before."""
    ops: list[Op] = []
    current = seed
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        if isinstance(current, bytes):
            op = draw_bytes_op(rng, current)
            current = apply_bytes(current, [op])
        else:
            op = draw_text_op(rng, current)
            current = apply_text(current, [op])
        ops.append(op)
    return ops


def apply(seed: bytes | str, ops: Sequence[Op]) -> bytes | str:
    """``seed`` mutated by ``ops``."""
    return apply_bytes(seed, ops) if isinstance(seed, bytes) else apply_text(seed, ops)
