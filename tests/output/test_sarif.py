"""SARIF 2.1.0 of the gate's problems: the shape code scanning reads, for every rule that can fire."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import replace

from regsurvey.check.baseline import Baseline
from regsurvey.check.gate import RULES, judge
from regsurvey.check.sites import Site
from regsurvey.diff.core import compare
from regsurvey.output.sarif import SARIF_SCHEMA, format_sarif, sarif_log

from ..lint_surveys import clean_and_mutated


def test_lint_problems_as_sarif() -> None:
    base, head = clean_and_mutated()
    broken = replace(head.rows[1], status="error", error="CompilationError: at 3:4\nmore", resources={}, lint=None)
    head_broken = replace(head, rows=(head.rows[0], broken))
    result = judge(compare(base, head_broken), Baseline())
    sites = {"gfx950:buffers/w8": Site("kernels/fixture.py", 10), "gfx950:gemm/w2": Site("keys/toy.py")}
    log = json.loads(format_sarif(result, sites))
    assert log == sarif_log(result, sites)
    assert log["$schema"] == SARIF_SCHEMA and log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "regsurvey" and driver["version"]
    assert [r["id"] for r in driver["rules"]] == [r.id for r in RULES]
    assert all({"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration"} <= set(r)
               for r in driver["rules"])
    newly, suspect = run["results"]
    assert (newly["ruleId"], newly["ruleIndex"], newly["level"]) == ("regsurvey/newly-failing", 0, "error")
    assert newly["message"]["text"] == "gemm/w2 on gfx950 (matmul_kernel) no longer builds: CompilationError: at 3:4"
    # No line known: the whole keys file.
    assert newly["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "keys/toy.py"}}}]
    assert (suspect["ruleId"], suspect["ruleIndex"]) == ("regsurvey/kernarg-never-read", 1)
    assert suspect["message"]["text"].startswith("buffers/w8 on gfx950 (many_buffers_kernel): kernel argument "
                                                 "out_ptr (#32, offset 256) loaded and never read")
    assert suspect["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "kernels/fixture.py"},
                                                           "region": {"startLine": 10}}
    assert [f["arg_name"] for f in suspect["properties"]["findings"]] == ["out_ptr"]
    assert suspect["properties"]["key"] == "buffers/w8" and suspect["properties"]["target"] == "gfx950"
    # Fingerprints name the problem, not the line: the same across runs, distinct between problems.
    again = sarif_log(result, {**sites, "gfx950:buffers/w8": Site("kernels/fixture.py", 99)})
    assert [r["partialFingerprints"] for r in again["runs"][0]["results"]] == \
        [r["partialFingerprints"] for r in run["results"]]
    assert newly["partialFingerprints"] != suspect["partialFingerprints"]
    assert run["properties"] == {"base": "a" * 40, "head": "b" * 40, "passed": False}


def test_a_passing_gate_has_no_results() -> None:
    base, _ = clean_and_mutated()
    log = sarif_log(judge(compare(base, base), Baseline()), {})
    assert log["runs"][0]["results"] == [] and log["runs"][0]["properties"]["passed"] is True


def test_a_path_with_a_space_hash_percent_and_non_ascii_is_percent_encoded() -> None:
    """``artifactLocation.uri`` is a URI reference (RFC 3986): ``#`` would start a fragment, ``%`` an
    escape, and a space or ``é`` is no URI character. Each is percent-encoded (UTF-8), ``/`` kept."""
    base, head = clean_and_mutated()
    broken = replace(head.rows[1], status="error", error="CompilationError: at 3:4", resources={}, lint=None)
    result = judge(compare(base, replace(head, rows=(head.rows[0], broken))), Baseline())
    path = "kernels/my kernels/#2 100%/décodé.py"
    log = sarif_log(result, {"gfx950:gemm/w2": Site(path, 7), "gfx950:buffers/w8": Site("c:b.py")})
    newly, suspect = log["runs"][0]["results"]
    location = newly["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "kernels/my%20kernels/%232%20100%25/d%C3%A9cod%C3%A9.py"},
                        "region": {"startLine": 7}}
    assert urllib.parse.unquote(location["artifactLocation"]["uri"]) == path
    # A colon in the first segment would read as a scheme ("c:" a drive letter to some readers).
    assert suspect["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "c%3Ab.py"
