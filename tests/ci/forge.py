"""A fake forge on loopback: a small ``http.server`` in a thread that answers the few GitHub and GitLab
API calls the comment script makes (list a request's comments page by page, create one, edit one), keeps
the comments it was given and made, and records every request as it came (method, path, query, headers,
JSON body)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Forge:
    """``flavour`` "github": ``/repos/{repo}/issues/{n}/comments``, pages by ``Link``; "gitlab":
    ``/projects/{id}/merge_requests/{iid}/notes``, pages by ``X-Next-Page``. Lists are served ``page_size``
    at a time whatever ``per_page`` asks, so that a few comments make several pages. ``refuse``, when
    set, is the (status, JSON body) every request gets."""

    flavour: str
    url: str = ""
    page_size: int = 2
    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    refuse: tuple[int, dict[str, Any]] | None = None
    next_id: int = 1000

    def add(self, body: str) -> int:
        self.next_id += 1
        self.comments.append({"id": self.next_id, "body": body, "user": {"login": "someone"}})
        return self.next_id

    def bodies(self) -> list[str]:
        return [c["body"] for c in self.comments]

    def calls(self) -> list[tuple[str, str]]:
        """(method, path and query) of each request, in order."""
        return [(r.method, r.path + (f"?{urllib.parse.urlencode(r.query)}" if r.query else "")) for r in self.requests]

    # The routes: what a list, an item and the request's collection are called on this forge.
    def _route(self, path: str) -> tuple[str, int | None] | None:
        parts = path.strip("/").split("/")
        if self.flavour == "gitlab" and parts[:2] == ["api", "v4"]:
            parts = parts[2:]
        if self.flavour == "github":
            if len(parts) == 6 and parts[0] == "repos" and parts[3] == "issues" and parts[5] == "comments":
                return "list", None
            if len(parts) == 6 and parts[0] == "repos" and parts[3:5] == ["issues", "comments"]:
                return "item", int(parts[5])
        else:
            if len(parts) == 5 and parts[0] == "projects" and parts[2] == "merge_requests" and parts[4] == "notes":
                return "list", None
            if len(parts) == 6 and parts[0] == "projects" and parts[4] == "notes":
                return "item", int(parts[5])
        return None

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, str], Any]:
        split = urllib.parse.urlsplit(raw_path)
        query = dict(urllib.parse.parse_qsl(split.query))
        self.requests.append(Recorded(method, split.path, query, headers, body))
        if self.refuse is not None:
            return self.refuse[0], {}, self.refuse[1]
        route = self._route(split.path)
        if route is None:
            return 404, {}, {"message": "Not Found"}
        what, ident = route
        if what == "list" and method == "GET":
            page = int(query.get("page", "1"))
            start = (page - 1) * self.page_size
            chunk = self.comments[start:start + self.page_size]
            more = start + self.page_size < len(self.comments)
            answer: dict[str, str] = {}
            if more and self.flavour == "github":
                following = urllib.parse.urlencode({**query, "page": page + 1})
                answer["Link"] = (f'<{self.url}{split.path}?{following}>; rel="next", '
                                  f'<{self.url}{split.path}?page=1>; rel="first"')
            if self.flavour == "gitlab":
                answer["X-Next-Page"] = str(page + 1) if more else ""
                answer["X-Page"] = str(page)
            return 200, answer, chunk
        if what == "list" and method == "POST":
            ident = self.add(body["body"])
            return 201, {}, self.comments[-1]
        if what == "item" and method == ("PATCH" if self.flavour == "github" else "PUT"):
            for comment in self.comments:
                if comment["id"] == ident:
                    comment["body"] = body["body"]
                    return 200, {}, comment
            return 404, {}, {"message": "Not Found"}
        return 405, {}, {"message": f"{method} not allowed here"}


def _handler(forge: Forge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, answer_headers, answer = forge.handle(self.command, self.path, headers, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in answer_headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextmanager
def serving(forge: Forge) -> Iterator[Forge]:
    """The forge answering on 127.0.0.1 (a free port) for the block; its ``url`` set."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(forge))
    forge.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield forge
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
