"""A composite action's steps, run here as GitHub's runner would run them: inputs resolved from ``with`` and
their defaults, ``${{ ... }}`` evaluated (the part of GitHub's expression language ``action.yml`` uses:
contexts, ``||``, ``&&``, ``==``, ``!=``, ``!``, literals, ``always()``, ``success()``, ``failure()``,
``hashFiles()``), each step's ``if`` judged (an ``if`` without a status function is ``success() && ...``),
``run`` steps executed by ``bash --noprofile --norc -eo pipefail`` in the workspace with their ``env``,
``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` files of their own, ``continue-on-error`` honoured. Steps that
``uses:`` another action (setup-python, cache, upload-sarif) are not run: their evaluated ``with`` is
recorded, so a test can see what they would have been given."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>\|\||&&|==|!=|!|\(|\)|,)"
                   r"|(?P<name>[A-Za-z_][\w.\-]*))")
STATUS_FUNCTIONS = ("always(", "success(", "failure(", "cancelled(")


@dataclass
class StepRun:
    name: str
    id: str | None
    ran: bool  # its `if` held
    uses: str | None = None
    with_: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: list[StepRun]
    failed: bool  # a step failed (not continue-on-error): the job fails
    summary: str  # the job's summary: every step's summary, in order

    def step(self, name_or_id: str) -> StepRun:
        return next(s for s in self.steps if name_or_id in (s.id, s.name))


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "")


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Expression:
    """One expression, evaluated against ``contexts`` (github, inputs, steps, runner, env) and the job's
    status so far."""

    def __init__(self, source: str, contexts: dict[str, Any], job_failed: bool, workspace: Path) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        source = source.strip()
        while position < len(source):
            match = TOKEN.match(source, position)
            if not match or match.end() == position:
                raise ValueError(f"cannot read the expression {source!r} at {position}")
            kind = match.lastgroup
            assert kind is not None
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.at = 0
        self.contexts, self.job_failed, self.workspace = contexts, job_failed, workspace

    def value(self) -> Any:
        result = self._or()
        if self.at != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.at][1]!r}")
        return result

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, found {token[1]!r}")
        self.at += 1
        return token

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._compare()
        while self._peek() == "&&":
            self._take()
            right = self._compare()
            left = right if truthy(left) else left
        return left

    def _compare(self) -> Any:
        left = self._unary()
        if self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._unary()
            same = text(left).lower() == text(right).lower()
            return same if op == "==" else not same
        return left

    def _unary(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        kind, token = self._take()
        if token == "(":
            inner = self._or()
            self._take(")")
            return inner
        if kind == "str":
            return token[1:-1].replace("''", "'")
        if kind == "num":
            return float(token)
        if kind != "name":
            raise ValueError(f"unexpected {token!r}")
        if token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        if self._peek() == "(":
            self._take()
            args = []
            while self._peek() != ")":
                args.append(self._or())
                if self._peek() == ",":
                    self._take()
            self._take(")")
            return self._call(token, args)
        value: Any = self.contexts
        for part in token.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def _call(self, name: str, args: list[Any]) -> Any:
        if name == "always":
            return True
        if name == "success":
            return not self.job_failed
        if name == "failure":
            return self.job_failed
        if name == "cancelled":
            return False
        if name == "hashFiles":
            digest = hashlib.sha256()
            found = False
            for pattern in args:
                for path in sorted(self.workspace.glob(text(pattern))):
                    if path.is_file():
                        found = True
                        digest.update(path.read_bytes())
            return digest.hexdigest() if found else ""
        raise ValueError(f"unknown function {name}()")


def interpolate(source: str, contexts: dict[str, Any], job_failed: bool, workspace: Path) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}",
                  lambda m: text(Expression(m.group(1), contexts, job_failed, workspace).value()), source)


def condition(source: Any, contexts: dict[str, Any], job_failed: bool, workspace: Path) -> bool:
    if source is None:
        source = "success()"
    source = str(source).strip()
    if source.startswith("${{") and source.endswith("}}"):
        source = source[3:-2]
    if not any(function in source for function in STATUS_FUNCTIONS):
        source = f"success() && ({source})"
    return truthy(Expression(source, contexts, job_failed, workspace).value())


def run_action(action_dir: Path, inputs: dict[str, str], github: dict[str, Any], workspace: Path,
               env: dict[str, str], skip: tuple[str, ...] = ()) -> ActionRun:
    """Run ``action_dir/action.yml``'s steps in ``workspace``; the ids in ``skip`` are not run (their ``if``
    still judged) as though they had succeeded with no outputs."""
    spec = yaml.safe_load((action_dir / "action.yml").read_text())
    assert spec["runs"]["using"] == "composite"
    contexts: dict[str, Any] = {"github": github, "runner": {"os": "Linux", "temp": str(workspace.parent)},
                                "env": env, "steps": {}}
    resolved: dict[str, str] = {}
    for name, declared in spec.get("inputs", {}).items():
        if name in inputs:
            resolved[name] = inputs[name]
        else:
            resolved[name] = interpolate(text(declared.get("default", "")), contexts, False, workspace)
    unknown = set(inputs) - set(resolved)
    assert not unknown, f"inputs the action does not declare: {unknown}"
    contexts["inputs"] = resolved
    runs: list[StepRun] = []
    failed = False
    summaries: list[str] = []
    scratch = workspace.parent / "runner"
    scratch.mkdir(exist_ok=True)
    for number, step in enumerate(spec["runs"]["steps"]):
        record = StepRun(name=step.get("name", f"step {number}"), id=step.get("id"), ran=False)
        runs.append(record)
        state = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
        if record.id:
            contexts["steps"][record.id] = state
        if not condition(step.get("if"), contexts, failed, workspace):
            continue
        record.ran = True
        state.update(outcome="success", conclusion="success")
        if "uses" in step:
            record.uses = step["uses"]
            record.with_ = {k: interpolate(text(v), contexts, failed, workspace)
                            for k, v in (step.get("with") or {}).items()}
            continue
        if record.id in skip:
            continue
        assert step.get("shell") == "bash", "a composite action's run step names its shell"
        record.env = {k: interpolate(text(v), contexts, failed, workspace) for k, v in (step.get("env") or {}).items()}
        output_file = scratch / f"output-{number}"
        summary_file = scratch / f"summary-{number}"
        output_file.write_text("")
        summary_file.write_text("")
        script = scratch / f"step-{number}.sh"
        script.write_text(interpolate(step["run"], contexts, failed, workspace))
        environ = {**env, **record.env, "GITHUB_ACTION_PATH": str(action_dir), "GITHUB_OUTPUT": str(output_file),
                   "GITHUB_STEP_SUMMARY": str(summary_file), "GITHUB_WORKSPACE": str(workspace)}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=environ, capture_output=True, text=True, timeout=300)
        record.returncode, record.stdout, record.stderr = done.returncode, done.stdout, done.stderr
        record.outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
        state["outputs"] = record.outputs
        summaries.append(summary_file.read_text())
        if done.returncode != 0:
            state["outcome"] = "failure"
            if text(step.get("continue-on-error", False)) != "true":
                state["conclusion"] = "failure"
                failed = True
    return ActionRun(steps=runs, failed=failed, summary="".join(summaries))


def environment(python: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    """The runner's environment: ``python`` on PATH is ``python`` (as setup-python leaves it), and
    nothing of the test process's own CI or GitHub variables."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "python"
    shim.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    shim.chmod(0o755)
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "CI_", "GITLAB_", "RUNNER_")) and k != "CI"}
    return {**keep, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", **extra}
