"""The content-addressed result cache (regsurvey.store.resultcache), on a real object and its real analysis:
entries keyed on Triton's hash and the reader revision, checked by their own checksum and by the sha256
of the object they name, reported in one line and never reused when damaged, written atomically; an entry
answering another question (copied over another's) refused, and with REGSURVEY_CACHE_KEY set only entries
signed with that key believed."""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import resource
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.analysis import analyze
from regsurvey.model.results import ObjectRef, ObjectReport
from regsurvey.model.targets import get_target
from regsurvey.model.version import READER_REVISION
from regsurvey.store import resultcache
from regsurvey.store.objectstore import ObjectStore
from regsurvey.store.resultcache import CachedResult, ResultCache
from regsurvey.store.signing import CACHE_KEY_VAR, SigningKeyError, Unsigned, unsigned_warning

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


def test_an_entry_keeps_the_stage_times_of_its_compile(objects: ObjectStore, binary: bytes,
                                                      clean_report: ObjectReport) -> None:
    """A build reused from the cache keeps the measurement of the compile that made it; an entry written
    before stages were measured (no ``stage_s`` in its payload) reads with none."""
    from regsurvey.model.compile_time import StageTimes

    cache = ResultCache(objects)
    stages = StageTimes({"frontend": 0.01, "llir": 0.4, "amdgcn": 0.7, "assembler": 0.002, "lld": 0.001})
    result = replace(cached(objects, binary, clean_report), stage_s=stages)
    cache.put(HASH, result)
    assert cache.get(HASH) == result and cache.entries()[HASH].stage_s == stages
    entry = json.loads(entry_path(cache, HASH).read_text())
    assert entry["payload"]["stage_s"] == dict(stages)
    del entry["payload"]["stage_s"]
    entry["sha256"] = hashlib.sha256(json.dumps(entry["payload"], sort_keys=True).encode()).hexdigest()
    entry_path(cache, HASH).write_text(json.dumps(entry))
    older = cache.get(HASH)
    assert older is not None and older.stage_s is None and older.compile_s == result.compile_s


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


# -- a writer who means harm (issue 31, item 2) ---------------------------------------------------------

KEY = "0123456789abcdef" * 4  # what `openssl rand -hex 32` gives: 64 characters
OTHER_KEY = "fedcba9876543210" * 4


def collecting(objects: ObjectStore) -> tuple[ResultCache, list[Unsigned]]:
    """A cache whose entries ignored for their signature are collected (as a survey's worker does)."""
    ignored: list[Unsigned] = []
    return ResultCache(objects, unsigned=ignored.append), ignored


def test_an_entry_copied_over_another_is_refused_and_recompiled(objects: ObjectStore, binary: bytes,
                                                               clean_report: ObjectReport,
                                                               suspect_report: ObjectReport,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Both entries are whole, and their checksums hold: only the question inside tells them apart.
    cache = ResultCache(objects)
    cache.put("hash-a", cached(objects, binary, clean_report, compile_s=1.0))
    second = cached(objects, binary, suspect_report, compile_s=2.0)
    cache.put("hash-b", second)
    entry_b = entry_path(cache, "hash-b")
    entry_b.write_bytes(entry_path(cache, "hash-a").read_bytes())
    assert cache.get("hash-b") is None
    check_warning(capsys.readouterr().err, entry_b, "the entry of another build (Triton hash hash-a, not hash-b)")
    first = cache.get("hash-a")
    assert first is not None and first.compile_s == 1.0  # the original is untouched
    cache.put("hash-b", second)  # what the survey does after recompiling
    assert cache.get("hash-b") == second
    assert capsys.readouterr().err == ""


def test_an_entry_of_other_readers_copied_into_this_ones_place_is_refused(
        objects: ObjectStore, binary: bytes, clean_report: ObjectReport, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResultCache(objects)
    monkeypatch.setattr(resultcache, "READER_REVISION", "0.1+readers1")
    cache.put(HASH, cached(objects, binary, clean_report))
    old = entry_path(cache, HASH, "0.1+readers1")
    monkeypatch.undo()
    here = entry_path(cache, HASH)
    here.parent.mkdir(parents=True, exist_ok=True)
    here.write_bytes(old.read_bytes())
    assert cache.get(HASH) is None
    check_warning(capsys.readouterr().err, here, f"the entry of readers 0.1+readers1 (these are {READER_REVISION})")


def test_with_a_key_entries_are_signed_over_their_question(objects: ObjectStore, binary: bytes,
                                                          clean_report: ObjectReport,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    cache, ignored = collecting(objects)
    result = cached(objects, binary, clean_report)
    cache.put(HASH, result)
    entry = json.loads(entry_path(cache, HASH).read_text())
    canonical = json.dumps(entry["payload"], sort_keys=True).encode()
    assert entry["sha256"] == hashlib.sha256(canonical).hexdigest()
    assert entry["hmac"] == hmac.new(KEY.encode(), f"result {HASH} {READER_REVISION}".encode() + b"\0" + canonical,
                                     hashlib.sha256).hexdigest()
    assert cache.get(HASH) == result
    assert ignored == [] and capsys.readouterr().err == ""
    # A reader without the key believes a signed entry as it believes any other.
    monkeypatch.delenv(CACHE_KEY_VAR)
    assert ResultCache(objects).get(HASH) == result


@pytest.mark.parametrize(("written_with", "signed"), [(None, False), (OTHER_KEY, True)],
                         ids=["unsigned", "another-key"])
def test_with_a_key_an_entry_without_its_signature_is_ignored_and_recompiled(
        objects: ObjectStore, binary: bytes, clean_report: ObjectReport, monkeypatch: pytest.MonkeyPatch,
        written_with: str | None, signed: bool, capsys: pytest.CaptureFixture[str]) -> None:
    if written_with is None:
        monkeypatch.delenv(CACHE_KEY_VAR, raising=False)
    else:
        monkeypatch.setenv(CACHE_KEY_VAR, written_with)
    result = cached(objects, binary, clean_report)
    ResultCache(objects).put(HASH, result)
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    cache, ignored = collecting(objects)
    assert cache.get(HASH) is None
    assert ignored == [Unsigned(entry_path(cache, HASH).name, signed=signed)]
    assert capsys.readouterr().err == ""  # the survey says it, once for every entry (unsigned_warning)
    cache.put(HASH, result)  # recompiled: signed with this key now
    assert cache.get(HASH) == result and len(ignored) == 1
    # Without a collector, the warning is the survey's own line for one entry.
    monkeypatch.setenv(CACHE_KEY_VAR, OTHER_KEY)
    assert ResultCache(objects).get(HASH) is None
    (line,) = stderr_lines(capsys.readouterr().err)
    assert line == (f"regsurvey: warning: 1 cache entry without a valid {CACHE_KEY_VAR} signature (1 signed with "
                    f"another key or altered since: {entry_path(cache, HASH).name}) ignored; recompiling")


def test_an_edit_with_its_checksum_recomputed_is_caught_by_the_key_only(
        objects: ObjectStore, binary: bytes, clean_report: ObjectReport, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checksum is for accidents: anyone can recompute it. The signature is what a writer without the
    # key cannot make.
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    cache, ignored = collecting(objects)
    cache.put(HASH, cached(objects, binary, clean_report))
    entry = entry_path(cache, HASH)
    data = json.loads(entry.read_text())
    data["payload"]["report"]["resources"]["vgpr"] = 7
    data["sha256"] = hashlib.sha256(json.dumps(data["payload"], sort_keys=True).encode()).hexdigest()
    entry.write_text(json.dumps(data))
    assert cache.get(HASH) is None
    assert ignored == [Unsigned(entry.name, signed=True)]
    # What docs/trust.md says a cache without a key believes: whatever its writers wrote.
    monkeypatch.delenv(CACHE_KEY_VAR)
    edited = ResultCache(objects).get(HASH)
    assert edited is not None and edited.resources["vgpr"] == 7


def test_a_signed_entry_copied_over_another_is_refused(objects: ObjectStore, binary: bytes,
                                                      clean_report: ObjectReport, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Well signed, by this key, but the answer to another question.
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    cache, ignored = collecting(objects)
    cache.put("hash-a", cached(objects, binary, clean_report))
    entry_b = entry_path(cache, "hash-b")
    entry_b.parent.mkdir(parents=True, exist_ok=True)
    entry_b.write_bytes(entry_path(cache, "hash-a").read_bytes())
    assert cache.get("hash-b") is None and ignored == []
    check_warning(capsys.readouterr().err, entry_b, "the entry of another build (Triton hash hash-a, not hash-b)")


def test_entries_sent_to_a_cluster_hold_as_get_checks_them(objects: ObjectStore, binary: bytes,
                                                           clean_report: ObjectReport,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    result = cached(objects, binary, clean_report)
    ResultCache(objects).put("unsigned", result)
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    cache, ignored = collecting(objects)
    cache.put("signed", result)
    assert ResultCache(objects).entries().keys() == {"signed"}
    cache.entries()
    assert ignored == [Unsigned(entry_path(cache, "unsigned").name, signed=False)]


@pytest.mark.parametrize("value", ["secret", "x" * 31])
def test_a_key_too_short_to_keep_a_secret_is_refused(objects: ObjectStore, value: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_KEY_VAR, value)
    with pytest.raises(SigningKeyError) as raised:
        ResultCache(objects)
    assert str(raised.value) == (f"{CACHE_KEY_VAR} holds {len(value)} characters; a signing key needs at least 32 "
                                 "(e.g. the output of `openssl rand -hex 32`)")
    monkeypatch.setenv(CACHE_KEY_VAR, "")  # a secret a job is not given reads empty: no key
    assert ResultCache(objects).key is None


def test_the_warning_counts_and_names_the_entries() -> None:
    entries = [Unsigned(f"{c * 8}.json", signed=c in "ab") for c in "abcde"]
    assert unsigned_warning(entries) == (
        f"regsurvey: warning: 5 cache entries without a valid {CACHE_KEY_VAR} signature (3 unsigned, 2 signed "
        "with another key or altered since: aaaaaaaa.json, bbbbbbbb.json, cccccccc.json and 2 more) ignored; "
        "recompiling")
