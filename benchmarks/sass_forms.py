"""The table of SASS instruction forms the kernarg lint reads without nvdisasm (regsurvey/objects/sass_forms.json),
learned from nvdisasm's own text of every cubin in the stores given, and its proof on them.

For every cubin found (``objects/**/<sha>.cubin`` in each store, with its PTX kept beside it) this:

1. disassembles it with the nvdisasm bundled with Triton (``-c -hex``: each instruction's text and its first
   64-bit word), and notes per architecture and form (bits 0-11 of the word) whether the instruction printed
   a constant-bank operand ``c[bank][offset]`` equal to the bank (bits 54-58) and offset (bits 40-53, in
   words) the word holds, printed none, or printed one the bits do not give (such a form is never trusted);
2. with ``--write``, writes the table: per architecture the forms every one of whose instructions held
   their operand where the bits say (``const``), and those none of whose instructions printed one
   (``none``); a form seen both ways, or otherwise, is left out (the lint disassembles a cubin holding it);
3. proves the lint's shortcut on every cubin with its PTX: the findings of the lint as it runs in a survey
   (the words read first) equal those of the full disassembly, and says how many cubins needed no nvdisasm.

    python benchmarks/sass_forms.py STORE_OR_DIR... [--write]

A benchmark, not a test: it prints figures (the table's tests: tests/lint/test_sass_words.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regsurvey.compile.triton_facts import APPENDED_ARGS  # noqa: E402
from regsurvey.lint.nvidia import _access_bytes, lint_nvidia  # noqa: E402
from regsurvey.objects import sass_words  # noqa: E402
from regsurvey.objects.nvidia_object import instruction_words, run_tool  # noqa: E402
from regsurvey.store.objectstore import ObjectStore  # noqa: E402

# An instruction's line of ``nvdisasm -hex``: its text and first word, and the next line's second word.
_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* 0x([0-9a-f]{16}) \*/\s*\n\s*/\* 0x([0-9a-f]{16}) \*/")
_CONST = re.compile(r"(?<![\w.])c\[0x([0-9a-f]+)\]\[0x([0-9a-f]+)\]")
_ANY_CONST = re.compile(r"(?<![\w.])c\[")  # a constant-bank operand (not ``desc[`` nor ``gdesc[``)


def cubins(paths: list[Path]) -> list[Path]:
    found: set[Path] = set()
    for path in paths:
        found |= set(path.rglob("*.cubin")) if path.is_dir() else {path}
    return sorted(found)


def ptx_of(cubin: Path) -> str | None:
    """The PTX a store keeps beside the cubin (read as the lint reads it), or None."""
    store = ObjectStore(cubin.parents[1])
    try:
        return store.text(f"objects/{cubin.parent.name}/{cubin.name}", "ptx")
    except Exception:
        return None


def _code(data: bytes) -> tuple[int, bytes]:
    """A cubin's architecture and its code (every ``.text.*`` section, each padded to 128 bytes)."""
    import io

    from elftools.elf.elffile import ELFFile

    arch, _ = instruction_words(data)  # raises for a cubin that does not read
    code = bytearray()
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if section.name.startswith(".text."):
            code += section.data()
            code += bytes(-len(code) % 128)
    return arch, bytes(code)


def learn(found: list[Path]) -> dict[int, dict[int, dict[str, int]]]:
    """Per architecture and form: how many instructions held their operand where the bits say (``const``),
    printed none (``none``), or printed one elsewhere (``other``). The cubins' code is disassembled in runs of
    many (``--binary``), as the survey's batched lint does."""
    seen: dict[int, dict[int, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    widths = WIDTHS
    blobs: dict[int, list[bytes]] = defaultdict(list)
    for path in found:
        try:
            arch, code = _code(path.read_bytes())
        except Exception as exc:
            print(f"  skipped {path.name}: {exc}")
            continue
        blobs[arch].append(code)
    for arch, codes in blobs.items():
        for at in range(0, len(codes), 200):
            with tempfile.TemporaryDirectory() as tmp:
                blob = Path(tmp) / "code.bin"
                blob.write_bytes(b"".join(codes[at:at + 200]))
                text = run_tool("nvdisasm", ["--binary", f"SM{arch}a", "-hex", str(blob)], str(blob))
            for match in _LINE.finditer(text):
                _note(seen[arch], widths[arch], match[2], int(match[3], 16), int(match[4], 16))
    return seen


# Per architecture and form of a constant operand: (size field, bytes the instruction printed it reads), seen.
WIDTHS: dict[int, dict[int, set[tuple[int, int]]]] = defaultdict(lambda: defaultdict(set))


def _note(by_form: dict[int, dict[str, int]], widths: dict[int, set[tuple[int, int]]], instruction: str, low: int,
          high: int) -> None:
    form = low & sass_words.FORM_MASK
    consts = _CONST.findall(instruction)
    operands = _ANY_CONST.findall(instruction)
    if not operands:
        by_form[form]["none"] += 1
    elif len(consts) == 1 and len(operands) == 1 and int(consts[0][0], 16) == (low >> 54) & 0x1F and (
            shifts := _shifts(low, int(consts[0][1], 16)) & SHIFTS[id(by_form)].get(form, set(range(32, 45)))):
        SHIFTS[id(by_form)][form] = shifts
        by_form[form]["const"] += 1
        words = instruction.split()
        opcode = words[1] if words[0].startswith("@") else words[0]
        name, _, suffixes = opcode.partition(".")
        widths[form].add((sass_words.size_field(high), _access_bytes(name, "." + suffixes if suffixes else "")))
    else:
        by_form[form]["other"] += 1


# Per table of forms (an architecture's) and form: the bit positions its offset may start at, every
# instruction of it agreeing.
SHIFTS: dict[int, dict[int, set[int]]] = defaultdict(dict)


def _shifts(low: int, offset: int) -> set[int]:
    """Where in the first word (bits ``s`` to 53) a byte offset equal to the printed one is."""
    return {s for s in range(32, 45) if (low >> s) & ((1 << (54 - s)) - 1) == offset}


def _size(seen: set[tuple[int, int]]) -> dict[str, int] | int:
    """A constant form's bytes: by size field where each value of it always read one width and the values
    tell two widths apart; else the fewest bytes any instruction of the form read."""
    by_field: dict[int, set[int]] = defaultdict(set)
    for field, width in seen:
        by_field[field].add(width)
    if all(len(w) == 1 for w in by_field.values()) and len({min(w) for w in by_field.values()}) > 1:
        return {str(field): min(w) for field, w in sorted(by_field.items())}
    return min(width for _, width in seen)


def table(seen: dict[int, dict[int, dict[str, int]]]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for arch, by_form in sorted(seen.items()):
        const = sorted(f for f, n in by_form.items() if set(n) == {"const"})
        none = sorted(f for f, n in by_form.items() if set(n) == {"none"})
        shifts = SHIFTS[id(by_form)]
        const = [f for f in const if len(shifts[f]) == 1]  # an offset's place pinned by the instructions seen
        out[str(arch)] = {"const": {f"{f:03x}": {"offset_bit": min(shifts[f]), "bytes": _size(WIDTHS[arch][f])}
                                    for f in const},
                          "none": [f"{f:03x}" for f in none]}
    return out


def prove(found: list[Path]) -> str:
    """The survey's lint (words first) against the full disassembly's (nvdisasm in runs of many cubins, as
    the survey's batched lint), cubin by cubin; the proof's line."""
    from regsurvey.lint.nvidia import read_in_words
    from regsurvey.objects.nvidia_object import disassemble_many

    sass_words.forms.cache_clear()
    items: dict[int, list[tuple[Path, str, bytes]]] = defaultdict(list)
    skipped = 0
    for path in found:
        ptx, data = ptx_of(path), path.read_bytes()
        try:
            arch, _ = instruction_words(data)
        except Exception:
            arch = -1
        if ptx is None or arch < 0:
            skipped += ptx is not None
            continue
        items[arch].append((path, ptx, data))
    same = differ = cleared = findings = 0
    full_s = words_s = 0.0
    for _, group in sorted(items.items()):
        for at in range(0, len(group), 100):
            chunk = group[at:at + 100]
            began = time.perf_counter()
            texts = disassemble_many([data for _, _, data in chunk])
            full_s += time.perf_counter() - began
            for (path, ptx, data), sass in zip(chunk, texts):
                try:
                    full = lint_nvidia(ptx, data, appended_args=len(APPENDED_ARGS), sass=sass)
                    began = time.perf_counter()
                    cleared += read_in_words(ptx, data, appended_args=len(APPENDED_ARGS))
                    words_s += time.perf_counter() - began
                    quick = lint_nvidia(ptx, data, appended_args=len(APPENDED_ARGS))
                except Exception as exc:
                    skipped += 1
                    print(f"  not linted {path.name}: {exc}")
                    continue
                findings += len(full)
                if full == quick:
                    same += 1
                else:
                    differ += 1
                    print(f"  DIFFERS {path}: full {full} words-first {quick}")
    line = (f"{same} cubins with the same findings ({findings} findings), {differ} differing, {skipped} not linted; "
            f"{cleared} cleared by their words with no nvdisasm; reading the words took {words_s:.1f} s, "
            f"nvdisasm in runs of 100 {full_s:.1f} s")
    print("proof:", line)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help="write regsurvey/objects/sass_forms.json")
    args = parser.parse_args()
    found = cubins(args.paths)
    print(f"{len(found)} cubins")
    seen = learn(found)
    for arch, by_form in sorted(seen.items()):
        kinds = {k: sum(1 for n in by_form.values() if set(n) == {k}) for k in ("const", "none")}
        mixed = sum(1 for n in by_form.values() if len(n) > 1 or "other" in n)
        print(f"sm_{arch}: {sum(sum(n.values()) for n in by_form.values())} instructions, {len(by_form)} forms: "
              f"{kinds['const']} with a constant operand, {kinds['none']} without, {mixed} left out")
    if args.write:
        learned = table(seen)
        sass_words.FORMS_FILE.write_text(json.dumps({
            "learned from": f"{len(found)} cubins by benchmarks/sass_forms.py (nvdisasm --binary -hex)",
            "forms": learned}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {sass_words.FORMS_FILE}")
    prove(found)


if __name__ == "__main__":
    main()
