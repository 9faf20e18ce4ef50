#!/usr/bin/env python3
"""Create or update the one regsurvey comment of a pull request (GitHub) or merge request (GitLab).

    python ci/pr_comment.py --body regsurvey.md                    # the forge and the request from CI's env
    python ci/pr_comment.py --forge github --number 42 --body regsurvey.md

The comment is found again by a hidden HTML marker (``<!-- regsurvey -->``) on its first line: the first
run posts it, every later run edits it in place, so a request carries one regsurvey comment however many
times it is pushed to. Only the standard library: the script runs before (or without) regsurvey's own
environment.

GitHub (``--forge github``, the default under GitHub Actions): ``GITHUB_API_URL`` (default
https://api.github.com), ``GITHUB_REPOSITORY`` (owner/name), the token in ``GITHUB_TOKEN`` (sent as
``Authorization: Bearer``), the pull request's number from ``--number`` or the event in ``GITHUB_EVENT_PATH``.
Comments are listed with ``GET /repos/{repo}/issues/{number}/comments`` (every page, by the ``Link``
header), then edited with ``PATCH /repos/{repo}/issues/comments/{id}`` or created with ``POST``.

GitLab (``--forge gitlab``, the default when ``GITLAB_CI`` is set): ``CI_API_V4_URL``, ``CI_PROJECT_ID``,
the merge request's iid from ``--number`` or ``CI_MERGE_REQUEST_IID``, and a token: ``REGSURVEY_GITLAB_TOKEN``
or ``GITLAB_TOKEN`` (a project or personal access token with the ``api`` scope, sent as ``PRIVATE-TOKEN``),
else ``CI_JOB_TOKEN`` (sent as ``JOB-TOKEN``, where the instance lets a job token write notes). Notes are
listed with ``GET /projects/:id/merge_requests/:iid/notes`` (every page), then edited with ``PUT .../notes/:id``
or created with ``POST``.

Nothing secret is posted or printed: the body, and any message, have the value of every secret variable
of the environment (the token in use among them; ``secret_vars.py`` says which variables are secret)
replaced by ``[secret NAME]``. The body is the report of a job that ran the request's code: it is read as
text (at most the forge's limit, four bytes a character) and never run.

Exit status: 0 when the comment was created or updated; 2 with one line on stderr when the environment
lacks what is needed, the body cannot be read, or the API refuses (its status and message).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from secret_vars import Scrubber

MARKER = "<!-- regsurvey -->"
# GitHub refuses a comment over 65536 characters; GitLab's limit (1,000,000) is far above any report.
MAX_BODY = {"github": 65536, "gitlab": 1_000_000}
TRUNCATED = "\n\n… (cut here: the whole report is in the job's summary and artifacts)\n"
TIMEOUT = 30.0
USER_AGENT = "regsurvey-ci"
# GitLab's tokens, first found first: access tokens go in PRIVATE-TOKEN, the job's own in JOB-TOKEN.
GITLAB_TOKENS = (("REGSURVEY_GITLAB_TOKEN", "PRIVATE-TOKEN"), ("GITLAB_TOKEN", "PRIVATE-TOKEN"),
                 ("CI_JOB_TOKEN", "JOB-TOKEN"))


class Failure(Exception):
    """What stops the script: said in one line, exit status 2."""


@dataclass(frozen=True)
class Api:
    """One forge's comment endpoints for one request, and how to authenticate."""

    forge: str
    list_url: str  # GET (paginated), and POST to create
    item_url: str  # with {id}: PATCH (GitHub) or PUT (GitLab) to update
    update_method: str
    headers: dict[str, str]
    scrub: Scrubber  # the environment's secrets and the token in use: no body or message shows them


def _need(env: Mapping[str, str], name: str, what: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise Failure(f"{name} is not set ({what})")
    return value


def _event_number(env: Mapping[str, str]) -> str:
    """The pull request's number from the event GitHub Actions ran for."""
    path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        raise Failure("no pull request number: pass --number N, or run on a pull_request event "
                      "(GITHUB_EVENT_PATH is not set)")
    try:
        with open(path, encoding="utf-8") as handle:
            event = json.load(handle)
    except (OSError, ValueError) as exc:
        raise Failure(f"cannot read the event in GITHUB_EVENT_PATH ({path}): {exc}") from None
    for candidate in ((event.get("pull_request") or {}).get("number"), (event.get("issue") or {}).get("number"),
                      event.get("number")):
        if isinstance(candidate, int) and candidate > 0:
            return str(candidate)
    raise Failure(f"the event in {path} is not a pull request's (no pull_request.number): pass --number N")


def github_api(env: Mapping[str, str], number: str | None) -> Api:
    base = env.get("GITHUB_API_URL", "").strip() or "https://api.github.com"
    repo = _need(env, "GITHUB_REPOSITORY", "owner/name of the repository")
    token = _need(env, "GITHUB_TOKEN", "a token that may write pull-request comments, e.g. ${{ github.token }}")
    number = number or _event_number(env)
    root = f"{base.rstrip('/')}/repos/{repo}/issues"
    return Api(forge="github", list_url=f"{root}/{number}/comments", item_url=root + "/comments/{id}",
               update_method="PATCH", scrub=Scrubber.of(env, also={"GITHUB_TOKEN": token}),
               headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                        "X-GitHub-Api-Version": "2022-11-28"})


def gitlab_api(env: Mapping[str, str], number: str | None) -> Api:
    base = _need(env, "CI_API_V4_URL", "the GitLab API's root, e.g. https://gitlab.example.com/api/v4")
    project = _need(env, "CI_PROJECT_ID", "the project's id")
    number = number or _need(env, "CI_MERGE_REQUEST_IID",
                             "the merge request's iid: run in a merge-request pipeline, or pass --number N")
    found = [(name, env.get(name, "").strip(), header) for name, header in GITLAB_TOKENS
             if env.get(name, "").strip()]
    if not found:
        raise Failure("no token: set REGSURVEY_GITLAB_TOKEN (an access token with the api scope) "
                      "or run in a GitLab job (CI_JOB_TOKEN)")
    name, token, header = found[0]
    root = f"{base.rstrip('/')}/projects/{urllib.parse.quote(project, safe='')}/merge_requests/{number}/notes"
    return Api(forge="gitlab", list_url=root, item_url=root + "/{id}", update_method="PUT",
               scrub=Scrubber.of(env, also={name: token}), headers={header: token})


def _next_page(headers: Mapping[str, str], url: str) -> str | None:
    """The next page's URL: the ``Link`` header's ``rel="next"`` (GitHub and GitLab), else GitLab's
    ``X-Next-Page``."""
    for part in (headers.get("Link") or "").split(","):
        match = re.match(r'\s*<([^>]*)>\s*;(.*)', part)
        if match and re.search(r'rel="?next"?', match.group(2)):
            return urllib.parse.urljoin(url, match.group(1))
    page = (headers.get("X-Next-Page") or "").strip()
    if page:
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        query["page"] = page
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    return None


def _request(api: Api, method: str, url: str, payload: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
    data = json.dumps(payload).encode() if payload is not None else None
    headers = {**api.headers, "User-Agent": USER_AGENT}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            raw = response.read()
            answer_headers = dict(response.headers.items())
    except urllib.error.HTTPError as exc:
        raise Failure(f"{method} {url}: HTTP {exc.code} {_message(exc, api.scrub)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Failure(f"{method} {url}: {api.scrub.text(str(reason))}") from None
    try:
        return (json.loads(raw) if raw.strip() else None), answer_headers
    except ValueError:
        raise Failure(f"{method} {url}: the answer is not JSON") from None


def _message(error: urllib.error.HTTPError, scrub: Scrubber) -> str:
    """The API's own words for a refusal (GitHub's and GitLab's ``message``/``error``), on one line."""
    try:
        body = error.read().decode("utf-8", "replace")
    except OSError:
        body = ""
    text = body
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            found = data.get("message") or data.get("error") or data.get("error_description")
            if found is not None:
                text = found if isinstance(found, str) else json.dumps(found)
    except ValueError:
        pass
    text = " ".join(text.split())[:300] or (error.reason or "")
    return scrub.text(f"({text})" if text else "")


def find_comment(api: Api) -> dict[str, Any] | None:
    """The first comment whose body starts with the marker, over every page of the request's comments."""
    sep = "&" if "?" in api.list_url else "?"
    url: str | None = f"{api.list_url}{sep}per_page=100"
    seen: set[str] = set()
    while url and url not in seen:
        seen.add(url)
        page, headers = _request(api, "GET", url)
        if not isinstance(page, list):
            raise Failure(f"GET {url}: expected a list of comments")
        for comment in page:
            if isinstance(comment, dict) and str(comment.get("body") or "").lstrip().startswith(MARKER):
                return comment
        url = _next_page(headers, url)
    return None


def comment_body(markdown: str, forge: str, env: Mapping[str, str]) -> str:
    """The marker, the report, and where the run is (when the CI says so), within the forge's limit."""
    footer = ""
    run_url = ""
    if forge == "github" and env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        run_url = f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
    elif forge == "gitlab" and env.get("CI_JOB_URL"):
        run_url = env["CI_JOB_URL"]
    if run_url:
        footer = f"\n<sub>[regsurvey check run]({run_url}); this comment is updated at each push.</sub>\n"
    body = f"{MARKER}\n{markdown.rstrip()}\n{footer}"
    limit = MAX_BODY[forge]
    if len(body) > limit:
        keep = limit - len(TRUNCATED) - len(footer)
        body = body[:keep].rstrip() + TRUNCATED + footer
    return body


def post(api: Api, body: str) -> tuple[str, Any]:
    """Update the marked comment, or create it; (``"updated"`` or ``"created"``, its id)."""
    found = find_comment(api)
    if found is not None:
        url = api.item_url.format(id=found["id"])
        _request(api, api.update_method, url, {"body": body})
        return "updated", found["id"]
    created, _ = _request(api, "POST", api.list_url, {"body": body})
    return "created", created.get("id") if isinstance(created, dict) else None


def read_body(path: str, limit: int) -> str:
    """The report at ``path``, at most ``limit`` characters and what follows to cut it there: a job that
    ran the request's code wrote it, and a file of gigabytes is cut, not read whole. Only a regular
    file: a FIFO left in its place would block the job."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without a writer, then is refused
    with open(fd, "rb", buffering=0) as raw:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        data = raw.read(4 * limit + 4)
    cut = len(data) > 4 * limit
    return data.decode("utf-8", errors="ignore" if cut else "strict")  # cut: a character split at the end


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--body", required=True, help="the Markdown file to post (regsurvey check's output)")
    parser.add_argument("--forge", choices=("github", "gitlab"),
                        help="default: gitlab when GITLAB_CI is set, else github")
    parser.add_argument("--number", help="the pull request's number / merge request's iid (default: from CI's env)")
    args = parser.parse_args(argv)
    forge = args.forge or ("gitlab" if env.get("GITLAB_CI") else "github")
    try:
        if args.number is not None and not args.number.isdigit():
            raise Failure(f"--number must be a pull or merge request's number, not {args.number!r}")
        try:
            markdown = read_body(args.body, MAX_BODY[forge])
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure(f"cannot read {args.body}: {getattr(exc, 'strerror', None) or exc}") from None
        if not markdown.strip():
            raise Failure(f"{args.body} is empty: nothing to post")
        api = (gitlab_api if forge == "gitlab" else github_api)(env, args.number)
        done, ident = post(api, comment_body(api.scrub.text(markdown), forge, env))
    except Failure as exc:
        print(f"pr_comment: error: {exc}", file=sys.stderr)
        return 2
    print(f"pr_comment: {done} the regsurvey comment ({forge} comment {ident})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
