"""The content-addressed result cache (regsurvey.store.resultcache), on a real object and its real analysis:
entries keyed on Triton's hash and the reader revision, checked by their own checksum and by the sha256
of the object they name, reported in one line and never reused when damaged, written atomically."""

from __future__ import annotations

import errno
import hashlib
import json
import resource
import signal
import threading
from pathlib import Path

import pytest

from regsurvey.analysis import analyze
from regsurvey.model.results import ObjectRef, ObjectReport
from regsurvey.model.targets import get_target
from regsurvey.model.version import READER_REVISION
from regsurvey.store import resultcache
from regsurvey.store.objectstore import ObjectStore
from regsurvey.store.resultcache import CachedResult, ResultCache

from ..lint_surveys import LINT_FIXTURES

BASE = "many_buffers-gfx950"
HASH = "c0ffee" * 10 + "beef"  # the shape of a Triton cache hash; any string keys an entry


@pytest.fixture(scope="module")
def binary() -> bytes:
    return (LINT_FIXTURES / f"{BASE}.hsaco").read_bytes()


@pytest.fixture(scope="module")
def clean_report(binary: bytes) -> ObjectReport:
    """The fixture object as Triton built it: linted, nothing found."""
    return analyze(get_target("gfx950"), binary, {"amdgcn": (LINT_FIXTURES / f"{BASE}.amdgcn").read_text()},
                   shared=0, num_warps=4)


@pytest.fixture(scope="module")
def suspect_report(binary: bytes) -> ObjectReport:
    """The same object read with a mutated amdgcn (a spilled argument never restored): one finding."""
    texts = {"amdgcn": (LINT_FIXTURES / "restore-removed.amdgcn").read_text(),
             "llir": (LINT_FIXTURES / f"{BASE}.llir").read_text()}
    return analyze(get_target("gfx950"), binary, texts, shared=0, num_warps=4)


@pytest.fixture
def objects(tmp_path: Path) -> ObjectStore:
    return ObjectStore(tmp_path / "store" / "objects")


def cached(objects: ObjectStore, binary: bytes, report: ObjectReport, compile_s: float = 1.25) -> CachedResult:
    sha, rel = objects.put(binary, "hsaco", {"amdgcn": (LINT_FIXTURES / f"{BASE}.amdgcn").read_text()})
    return CachedResult(kernel="many_buffers_kernel", report=report, object=ObjectRef(rel, sha), compile_s=compile_s)


def entry_path(cache: ResultCache, triton_hash: str, reader: str = READER_REVISION) -> Path:
    """Where the module docstring says an entry lives: results/<h[:2]>/<h>.json beside objects/."""
    h = hashlib.sha256(f"{triton_hash}-{reader}".encode()).hexdigest()
    return cache.objects.root.parent / "results" / h[:2] / f"{h}.json"


def stderr_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line]


def test_the_reports_are_real(clean_report: ObjectReport, suspect_report: ObjectReport) -> None:
    # What the other tests store: figures of the real HSACO, and the lint's verdicts on its two texts.
    assert clean_report.resources["vgpr"] == 70 and clean_report.resources["sgpr"] == 106
    assert clean_report.linted and clean_report.findings == ()
    assert suspect_report.resources == clean_report.resources
    assert [(f.arg_index, f.severity.value) for f in suspect_report.findings or ()] == [(32, "error")]


def test_a_result_comes_back_as_it_was_put(objects: ObjectStore, binary: bytes, suspect_report: ObjectReport,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    result = cached(objects, binary, suspect_report)
    assert cache.get(HASH) is None  # nothing stored yet: no warning either
    cache.put(HASH, result)
    back = cache.get(HASH)
    assert back == result
    assert back is not None and back.resources == suspect_report.resources and back.resources["vgpr"] == 70
    assert back.report.findings == suspect_report.findings and back.report.linted
    assert back.object.path == f"objects/{back.object.sha256[:2]}/{back.object.sha256}.hsaco"
    assert back.object.sha256 == hashlib.sha256(binary).hexdigest()
    assert capsys.readouterr().err == ""


def test_a_report_that_was_not_linted_stays_not_linted(objects: ObjectStore, binary: bytes,
                                                      clean_report: ObjectReport) -> None:
    cache = ResultCache(objects)
    unlinted = ObjectReport(clean_report.resources)
    cache.put("unlinted", cached(objects, binary, unlinted))
    cache.put("linted", cached(objects, binary, clean_report))
    back_unlinted, back_linted = cache.get("unlinted"), cache.get("linted")
    assert back_unlinted is not None and back_linted is not None
    assert not back_unlinted.report.linted and back_unlinted.report.findings is None
    assert back_linted.report.linted and back_linted.report.findings == ()


def test_entries_are_keyed_on_the_triton_hash_and_the_reader_revision(
        objects: ObjectStore, binary: bytes, clean_report: ObjectReport, suspect_report: ObjectReport,
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResultCache(objects)
    cache.put("hash-a", cached(objects, binary, clean_report, compile_s=1.0))
    cache.put("hash-b", cached(objects, binary, suspect_report, compile_s=2.0))
    entry = entry_path(cache, "hash-a")
    assert sorted(p for p in (objects.root.parent / "results").rglob("*") if p.is_file()) == sorted(
        [entry, entry_path(cache, "hash-b")])
    payload = json.loads(entry.read_text())["payload"]
    assert (payload["triton_hash"], payload["reader"], payload["kernel"]) == (
        "hash-a", READER_REVISION, "many_buffers_kernel")
    one, two = cache.get("hash-a"), cache.get("hash-b")
    assert one is not None and two is not None
    assert (one.compile_s, one.report.findings) == (1.0, ())
    assert (two.compile_s, len(two.report.findings or ())) == (2.0, 1)

    # Other readers (a regsurvey upgrade): the entries of these readers are not theirs.
    monkeypatch.setattr(resultcache, "READER_REVISION", READER_REVISION + "+next")
    assert cache.get("hash-a") is None
    cache.put("hash-a", cached(objects, binary, suspect_report, compile_s=3.0))
    assert entry_path(cache, "hash-a", READER_REVISION + "+next").is_file()
    again = cache.get("hash-a")
    assert again is not None and again.compile_s == 3.0
    monkeypatch.undo()
    back = cache.get("hash-a")  # the older readers' entry is untouched
    assert back is not None and back.compile_s == 1.0 and back.report.findings == ()


def check_warning(err: str, entry: Path, problem: str) -> None:
    (line,) = stderr_lines(err)
    assert line == f"regsurvey: warning: cache entry {entry.name} is {problem}; recompiling"


def test_a_truncated_entry_is_reported_and_not_reused(objects: ObjectStore, binary: bytes,
                                                      clean_report: ObjectReport,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    cache.put(HASH, cached(objects, binary, clean_report))
    entry = entry_path(cache, HASH)
    entry.write_text(entry.read_text()[:60])
    assert cache.get(HASH) is None
    check_warning(capsys.readouterr().err, entry, "malformed (JSONDecodeError)")


def test_an_altered_payload_fails_its_checksum(objects: ObjectStore, binary: bytes, clean_report: ObjectReport,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    cache.put(HASH, cached(objects, binary, clean_report))
    entry = entry_path(cache, HASH)
    data = json.loads(entry.read_text())
    data["payload"]["report"]["resources"]["vgpr"] = 7  # valid JSON, valid figures: only the checksum knows
    entry.write_text(json.dumps(data))
    assert cache.get(HASH) is None
    check_warning(capsys.readouterr().err, entry, "checksum mismatch (corrupt or truncated)")


@pytest.mark.parametrize("damage", ["truncated", "altered", "missing"])
def test_an_entry_whose_object_is_damaged_is_not_reused(objects: ObjectStore, binary: bytes,
                                                        clean_report: ObjectReport, damage: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    result = cached(objects, binary, clean_report)
    cache.put(HASH, result)
    obj = objects.root.parent / result.object.path
    if damage == "truncated":
        obj.write_bytes(binary[:100])
    elif damage == "altered":
        obj.write_bytes(binary[:-1] + bytes([binary[-1] ^ 1]))
    else:
        obj.unlink()
    assert cache.get(HASH) is None
    entry = entry_path(cache, HASH)
    problem = (f"stored object {result.object.path} is missing (No such file or directory)" if damage == "missing"
               else f"stored object {result.object.path} does not match its sha256 (corrupt or truncated)")
    check_warning(capsys.readouterr().err, entry, problem)
    # Once the object is stored again (a recompile), the entry is good again.
    objects.put(binary, "hsaco")
    assert cache.get(HASH) == result


def signed(payload: dict) -> str:
    """An entry whose checksum is right (as ResultCache.put computes it) around ``payload``."""
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return json.dumps({"sha256": digest, "payload": payload})


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda p: p.pop("kernel"), "malformed (KeyError)"),
    (lambda p: p["report"]["resources"].update(registers=3), "malformed (ValueError)"),  # not a known figure
    (lambda p: p["report"]["resources"].update(vgpr="70"), "malformed (ValueError)"),  # not a whole number
    (lambda p: p["object"].update(size=1), "malformed (TypeError)"),
    (lambda p: p["report"].update(findings="none"), "malformed (ValueError)"),
], ids=["no-kernel", "unknown-figure", "string-figure", "odd-object", "odd-findings"])
def test_a_well_signed_but_malformed_entry_is_reported(objects: ObjectStore, binary: bytes,
                                                       clean_report: ObjectReport, edit, problem: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    cache.put(HASH, cached(objects, binary, clean_report))
    entry = entry_path(cache, HASH)
    payload = json.loads(entry.read_text())["payload"]
    edit(payload)
    entry.write_text(signed(payload))
    assert cache.get(HASH) is None
    check_warning(capsys.readouterr().err, entry, problem)


@pytest.mark.parametrize("text", ["[]", "null", '"entry"', "{}", '{"sha256": "x"}'])
def test_json_that_is_no_entry_is_reported(objects: ObjectStore, text: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    entry = entry_path(cache, HASH)
    entry.parent.mkdir(parents=True)
    entry.write_text(text)
    assert cache.get(HASH) is None
    (line,) = stderr_lines(capsys.readouterr().err)
    assert line.startswith(f"regsurvey: warning: cache entry {entry.name} is malformed (")
    assert line.endswith("); recompiling")


def test_an_unreadable_entry_is_reported(objects: ObjectStore, capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    entry = entry_path(cache, HASH)
    entry.mkdir(parents=True)  # something in the entry's place that cannot be read as a file
    assert cache.get(HASH) is None
    check_warning(capsys.readouterr().err, entry, "unreadable (Is a directory)")


def test_an_entry_with_bytes_that_are_not_text_is_reported(objects: ObjectStore, binary: bytes,
                                                          clean_report: ObjectReport,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    cache.put(HASH, cached(objects, binary, clean_report))
    entry = entry_path(cache, HASH)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] = 0xFF
    entry.write_bytes(bytes(data))
    assert cache.get(HASH) is None
    (line,) = stderr_lines(capsys.readouterr().err)
    assert line.startswith(f"regsurvey: warning: cache entry {entry.name} is ")


def test_a_damaged_entry_is_replaced_by_the_next_put(objects: ObjectStore, binary: bytes,
                                                     clean_report: ObjectReport,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    result = cached(objects, binary, clean_report)
    cache.put(HASH, result)
    entry = entry_path(cache, HASH)
    entry.write_text("{")
    assert cache.get(HASH) is None
    cache.put(HASH, result)  # what the survey does after recompiling
    assert cache.get(HASH) == result
    assert len(stderr_lines(capsys.readouterr().err)) == 1  # the damaged read only


def test_a_put_replaces_the_entry_whole(objects: ObjectStore, binary: bytes, clean_report: ObjectReport,
                                        suspect_report: ObjectReport) -> None:
    cache = ResultCache(objects)
    cache.put(HASH, cached(objects, binary, clean_report, compile_s=1.0))
    entry = entry_path(cache, HASH)
    with entry.open("rb") as before:  # a reader that opened the entry before the next put
        cache.put(HASH, cached(objects, binary, suspect_report, compile_s=2.0))
        old = json.loads(before.read())
    assert old["payload"]["compile_s"] == 1.0 and old["payload"]["report"]["findings"] == []
    now = cache.get(HASH)
    assert now is not None and now.compile_s == 2.0 and len(now.report.findings or ()) == 1
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary file left


def test_a_put_that_fails_midway_leaves_the_old_entry(objects: ObjectStore, binary: bytes,
                                                      clean_report: ObjectReport,
                                                      suspect_report: ObjectReport) -> None:
    cache = ResultCache(objects)
    first = cached(objects, binary, clean_report, compile_s=1.0)
    cache.put(HASH, first)
    entry = entry_path(cache, HASH)
    size = entry.stat().st_size
    # The disk fills up (the file size limit is reached) in the middle of writing the new entry.
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, limits[1]))
    try:
        with pytest.raises(OSError) as failed:
            cache.put(HASH, cached(objects, binary, suspect_report, compile_s=2.0))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, previous)
    assert failed.value.errno == errno.EFBIG
    assert cache.get(HASH) == first
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]


def test_concurrent_puts_and_gets_never_see_a_partial_entry(objects: ObjectStore, binary: bytes,
                                                            clean_report: ObjectReport,
                                                            suspect_report: ObjectReport,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    results = [cached(objects, binary, report, compile_s=float(i))
               for i, report in enumerate([clean_report, suspect_report] * 2)]
    cache.put(HASH, results[0])
    seen: list[CachedResult | None] = []
    stop = threading.Event()

    def write(result: CachedResult) -> None:
        for _ in range(40):
            cache.put(HASH, result)

    def read() -> None:
        while not stop.is_set():
            seen.append(cache.get(HASH))

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(r,)) for r in results]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert seen and all(s in results for s in seen)
    assert capsys.readouterr().err == ""
    assert [p.name for p in entry_path(cache, HASH).parent.iterdir()] == [entry_path(cache, HASH).name]
