"""The gate's problems as SARIF 2.1.0, for code scanning (GitHub's ``upload-sarif``, and any other reader).

One run, tool driver ``regsurvey`` with every rule of :data:`regsurvey.check.gate.RULES`; one result per
problem (a build failing a rule), level ``error``, its message the same sentence the Markdown gives,
located at the build's launch site (a path relative to the repository root, and the line; for a launch in
a library outside the repository, the project's line that called into it, the library's frame in the
message), and
fingerprinted by rule, target, build and kernel so that code scanning keeps one alert per problem
across runs, whatever lines move. A pure function of the gate result and the sites.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ..check.gate import COMPILE_SLOWDOWN, RULES, GateResult, Problem
from ..check.sites import Site
from ..model.version import __version__
from .gate_text import problem_message

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

_RULE_HELP = {
    "regsurvey/newly-failing": "Make the key build again, or drop it from keys/ if the configuration is gone.",
    "regsurvey/kernarg-never-read": "Inspect the kernel's amdgcn or SASS: an argument the source uses is never "
                                    "read (a lost SGPR spill restore is the usual cause). `regsurvey lint` "
                                    "shows the load.",
    "regsurvey/new-spill": "Reduce register pressure (tile sizes, num_warps, num_stages), or accept the figures "
                           "with an [[allow]] entry and a reason in regsurvey.baseline.toml "
                           "(`regsurvey check --update-baseline --reason ...`).",
    "regsurvey/loop-spill": "A spill inside a loop runs on every trip: reduce the loop's live values (tile sizes, "
                            "num_stages, waves_per_eu or maxnreg), or accept it with an [[allow]] entry naming "
                            "loop_spill_ops (and loop_spill_depth) and a reason.",
    "regsurvey/occupancy-drop": "Registers, LDS or shared memory grew past an occupancy step; accept it with an "
                                "[[allow]] entry (e.g. occupancy = 2) and a reason if intended.",
    "regsurvey/register-increase": "Registers grew past the baseline's [check] register_increase; accept the "
                                   "figures with an [[allow]] entry and a reason if intended.",
    "regsurvey/compile-slowdown": "The toolchain (Triton, LLVM, ptxas) takes pathologically longer on this build: "
                                  "the message names the stage that grew most. Report it upstream, or accept it "
                                  "with [check] compile_slowdown / compile_slowdown_s in regsurvey.baseline.toml "
                                  "(false: off), or `check --compile-slowdown` for one run.",
}


def _rule(index: int) -> dict[str, Any]:
    rule = RULES[index]
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
        "help": {"text": _RULE_HELP.get(rule.id, rule.description)},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["correctness" if rule.id.endswith(("failing", "never-read")) else "performance"]},
    }


def _fingerprint(problem: Problem) -> str:
    row = problem.row
    identity = "\0".join((problem.rule.id, row.target, row.row_id, row.kernel or ""))
    return hashlib.sha256(identity.encode()).hexdigest()[:32]


def _result(problem: Problem, site: Site) -> dict[str, Any]:
    row = problem.row
    location: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(site.path)}}
    if site.line is not None:
        location["region"] = {"startLine": site.line}
    properties: dict[str, Any] = {"key": row.key, "target": row.target, "kernel": row.kernel, "build": row.row_id,
                                  "name": row.name.text}
    message = problem_message(problem)
    if site.via:  # launched in a library outside the repository: located at the project's call into it
        properties["launched_in"] = site.via
        message += f"; launched in the library at {site.via}"
    if problem.figures:
        properties["figures"] = {f.name: {"before": f.before, "after": f.after} for f in problem.figures}
    if problem.findings:
        properties["findings"] = [f.to_dict() for f in problem.findings]
    if problem.rule is COMPILE_SLOWDOWN and row.compile_time is not None:
        properties["compile_time"] = row.compile_time.to_dict()
    return {
        "ruleId": problem.rule.id,
        "ruleIndex": RULES.index(problem.rule),
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {"regsurveyBuild/v1": _fingerprint(problem)},
        "properties": properties,
    }


def sarif_log(result: GateResult, sites: Mapping[str, Site]) -> dict[str, Any]:
    """The SARIF log of ``result``; ``sites`` maps each problem's ``row.ref`` to its location."""
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {"name": "regsurvey", "version": __version__,
                                "rules": [_rule(i) for i in range(len(RULES))]}},
            "results": [_result(p, sites.get(p.row.ref, Site("keys"))) for p in result.problems],
            "properties": {"base": result.comparison.base.commit, "head": result.comparison.head.commit,
                           "passed": result.passed},
        }],
    }


def format_log(log: Mapping[str, Any]) -> str:
    """A SARIF log as the file holds it: indented JSON."""
    return json.dumps(log, indent=1) + "\n"


def format_sarif(result: GateResult, sites: Mapping[str, Site]) -> str:
    """:func:`sarif_log` as indented JSON."""
    return format_log(sarif_log(result, sites))


def artifact_uri(path: str) -> str:
    """A repository path as SARIF's ``artifactLocation.uri``: a relative reference (RFC 3986), each
    character outside the unreserved set percent-encoded as UTF-8 (a space, ``#``, ``%``, ``é``), so
    that a reader resolving it finds the file rather than a fragment or another name."""
    return urllib.parse.quote(path, safe="/")


__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "artifact_uri", "format_log", "format_sarif", "sarif_log"]
