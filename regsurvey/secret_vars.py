"""Which environment variables are secrets, the environment without them, and text with their values
replaced.

A CI job that runs ``regsurvey check`` on a merge request runs that request's code: the workers import
its keys files and kernels. The job's environment may also hold tokens (``CI_JOB_TOKEN``,
``GITHUB_TOKEN``, an access token for notes, cloud credentials). So the processes that run a project's
code get the environment without the secret variables (:func:`without_secrets`), and what leaves the
machine (the check's Markdown and SARIF, the CI scripts' report, note and artifacts) has every secret's
value replaced by ``[secret NAME]`` (:class:`Scrubber`): a leak through a file or a parent process's
environment still never reaches a comment.

A variable is a secret by its name, since GitLab's masked variables and GitHub's secrets look like any
other variable once in the environment: a word of the name (split at ``_``, ``-`` and ``.``, in any case)
is one of :data:`SECRET_WORDS` or ends in one of :data:`SECRET_ENDINGS`; or the name is one of
:data:`SECRET_NAMES`, starts with one of :data:`SECRET_PREFIXES`, or matches a glob of
``REGSURVEY_SECRET_VARS`` (names or globs, comma or space separated). ``KEY`` counts only as a whole
word: ``AWS_SECRET_ACCESS_KEY`` is a secret, ``REGSURVEY_KEYS`` (key globs) is not.

Standard library only, and nothing of regsurvey's: the CI scripts load this file by its path where
regsurvey is not installed (``ci/secret_vars.py``).
"""

from __future__ import annotations

import fnmatch
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

EXTRA_VARIABLE = "REGSURVEY_SECRET_VARS"
SECRET_WORDS = frozenset({"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
                          "CREDENTIALS", "KEY", "APIKEY", "AUTH", "JWT", "COOKIE", "PAT"})
# A word ending so is a secret too (GHTOKEN, DBPASSWORD); not KEY (MONKEYPATCH) nor TOKENS (MAX_TOKENS).
SECRET_ENDINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY")
# GitHub's runtime services (the cache and artifact tokens and URLs, the OIDC token request).
SECRET_PREFIXES = ("ACTIONS_",)
# GitLab's clone URL holds the job token.
SECRET_NAMES = frozenset({"CI_REPOSITORY_URL"})
# Shorter values are not replaced in text: "true", a port or a user name would blot out every report
# where they occur (GitLab masks only values of 8 characters or more, for the same reason).
MIN_SCRUBBED = 8


def extra_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The names and globs ``REGSURVEY_SECRET_VARS`` adds."""
    return tuple(part for part in re.split(r"[,\s]+", env.get(EXTRA_VARIABLE, "")) if part)


def is_secret(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether the variable ``name`` holds a secret (the module docstring says how it is recognised)."""
    if name == EXTRA_VARIABLE:  # its value names variables; it is none itself
        return False
    upper = name.upper()
    if upper in SECRET_NAMES or upper.startswith(SECRET_PREFIXES):
        return True
    for word in re.split(r"[_\-.]+", upper):
        if word in SECRET_WORDS or word.endswith(SECRET_ENDINGS):
            return True
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in extra)


def secret_names(env: Mapping[str, str]) -> list[str]:
    """The names of ``env``'s secret variables, sorted."""
    extra = extra_names(env)
    return sorted(name for name in env if is_secret(name, extra))


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less its secret variables: the environment of a process that runs a project's code."""
    secret = set(secret_names(env))
    return {name: value for name, value in env.items() if name not in secret}


def _forms(value: str) -> set[str]:
    """How ``value`` can appear in a report: as it is, percent-encoded (a SARIF URI, a URL) and escaped
    inside a JSON string."""
    return {value, urllib.parse.quote(value, safe=""), urllib.parse.quote(value, safe="/"),
            json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}


@dataclass(frozen=True)
class Scrubber:
    """Replaces the secret values of an environment in text that leaves the machine.

    ``replacements``: (a form of a secret value, what stands for it), longest first, so that a value
    holding another is replaced whole."""

    replacements: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, env: Mapping[str, str], also: Mapping[str, str] | None = None) -> Scrubber:
        """The scrubber of ``env``'s secret values of :data:`MIN_SCRUBBED` characters or more; ``also``:
        further (name, value) pairs to replace whatever their length (a token in use)."""
        pairs = [(name, env[name]) for name in secret_names(env) if len(env[name]) >= MIN_SCRUBBED]
        pairs += [(name, value) for name, value in (also or {}).items() if value]
        stand_in: dict[str, str] = {}
        for name, value in pairs:
            label = "[secret " + re.sub(r"[^A-Za-z0-9_.-]", "?", name) + "]"
            for form in _forms(value):
                stand_in.setdefault(form, label)
        ordered = sorted(stand_in.items(), key=lambda item: (-len(item[0]), item[0]))
        return cls(tuple(ordered))

    def __bool__(self) -> bool:
        return bool(self.replacements)

    def text(self, text: str) -> str:
        """``text`` with every secret value replaced by ``[secret NAME]``."""
        for form, label in self.replacements:
            if form in text:
                text = text.replace(form, label)
        return text

    def json(self, value: Any) -> Any:
        """JSON-like ``value`` (dicts, lists, strings, numbers) with every string scrubbed, keys too."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v) for v in value]
        return value


__all__ = ["EXTRA_VARIABLE", "MIN_SCRUBBED", "SECRET_ENDINGS", "SECRET_NAMES", "SECRET_PREFIXES", "SECRET_WORDS",
           "Scrubber", "extra_names", "is_secret", "secret_names", "without_secrets"]
