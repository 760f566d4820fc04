"""Test double of the Hugging Face hub's file API (the hub cannot be reached from CI).

Built from the client's side of the contract, huggingface_hub 2.4.0 (read from its wheel):
- `HfApi.model_info` (hf_api.py): GET /api/models/{repo_id}[/revision/{revision}] -> JSON object
  with `id`, `sha` (the commit) and `siblings` [{"rfilename": path}];
- `HfApi._iter_repo_tree_pages` + `RepoFile` (hf_api.py) and `_paginate_pages`
  (utils/_pagination.py): GET /api/models/{repo_id}/tree/{revision}[/{path}]?recursive=..&expand=..
  -> JSON list of {"type": "file", "oid", "size", "path", "lfs": {"oid", "size", "pointerSize"}}
  and {"type": "directory", "oid", "size": 0, "path"}; the hub caps a page at 1000 entries and
  links the next one with a `Link: <url>; rel="next"` header (GitHub style);
- `HUGGINGFACE_CO_URL_TEMPLATE` (constants.py): GET|HEAD /{repo_id}/resolve/{revision}/{filename};
  headers `X-Repo-Commit`, `ETag`, and for LFS files `X-Linked-Etag` / `X-Linked-Size` with a 302
  to the CDN (constants.py HUGGINGFACE_HEADER_*). A token is `Authorization: Bearer <token>`;
  private/gated repos answer 401 without one.
`oid` of a file is its git blob id: sha1(b"blob <size>\\0" + content); `lfs.oid` is the sha256 of
the content. Files at or above `lfs_threshold` bytes are stored as LFS, like the hub's large files,
and their download redirects to a CDN served on a second port (another origin, as the real CDN).
The double is checked against the real client: tests/integration/test_hf_hub_double.py runs
huggingface_hub's own `hf download` and `HfApi` against it.

Faults a test can arm (each consumed once unless noted): `truncate_once[path] = n` (send the
full Content-Length, close after n bytes), `corrupt[path]` (same size, different bytes; sticky),
`missing[path]` (listed, but resolve answers 404; sticky), `fail_tree_once` (500 on a listing).
Every request is recorded in `requests` as (method, path, had_authorization).
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Set, Tuple


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Repo:
    repo_id: str
    files: Dict[str, bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    branches: Dict[str, str] = field(default_factory=dict)
    lfs_threshold: int = 1024
    private: bool = False

    def __post_init__(self):
        self.branches.setdefault("main", self.commit)

    def resolve(self, revision: str) -> Optional[str]:
        if revision == self.commit:
            return self.commit
        return self.branches.get(revision)

    def is_lfs(self, path: str) -> bool:
        return len(self.files[path]) >= self.lfs_threshold

    def entry(self, path: str) -> dict:
        content = self.files[path]
        e = {"type": "file", "oid": git_blob_oid(content), "size": len(content), "path": path}
        if self.is_lfs(path):
            # the git blob of an LFS file is its pointer; `size` is the real size (as the hub)
            pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:"
                       f"{hashlib.sha256(content).hexdigest()}\nsize {len(content)}\n").encode()
            e["oid"] = git_blob_oid(pointer)
            e["lfs"] = {"oid": hashlib.sha256(content).hexdigest(), "size": len(content),
                        "pointerSize": len(pointer)}
        return e

    def tree(self, under: str, recursive: bool) -> List[dict]:
        """Entries under `under` ("" = root), directories first then files, sorted (as the hub)."""
        base = under.strip("/")
        dirs: Set[str] = set()
        files: List[str] = []
        for path in sorted(self.files):
            if base and not path.startswith(base + "/"):
                continue
            rel = path[len(base) + 1:] if base else path
            parts = rel.split("/")
            for i in range(1, len(parts)):
                d = "/".join(([base] if base else []) + parts[:i])
                if recursive or i == 1:
                    dirs.add(d)
            if recursive or len(parts) == 1:
                files.append(path)
        out = [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
               for d in sorted(dirs)]
        return out + [self.entry(p) for p in files]


class HubDouble:
    """A threaded HTTP server on 127.0.0.1 speaking the hub file API for `repos`."""

    def __init__(self, repos: List[Repo], token: Optional[str] = None, page_size: int = 1000):
        self.repos = {r.repo_id: r for r in repos}
        self.token = token
        self.page_size = page_size
        self.truncate_once: Dict[str, int] = {}
        self.corrupt: Set[str] = set()
        self.missing: Set[str] = set()
        self.fail_tree_once = False
        self.requests: List[Tuple[str, str, bool]] = []
        self.served: Dict[str, int] = {}
        self.lock = threading.Lock()
        # the hub and its CDN are different origins (as huggingface.co and its CDN hosts), so a
        # client's cross-origin redirect rules apply to the token exactly as in real life
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.cdn = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.threads = []
        for srv in (self.server, self.cdn):
            srv.daemon_threads = True
            self.threads.append(threading.Thread(target=srv.serve_forever, daemon=True))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def cdn_url(self) -> str:
        return f"http://127.0.0.1:{self.cdn.server_address[1]}"

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        for srv in (self.server, self.cdn):
            srv.shutdown()
            srv.server_close()

    def downloads(self, path: str) -> int:
        """How many times the body of `path` was sent (GET, from the hub or its CDN)."""
        with self.lock:
            return self.served.get(path, 0)


def _handler(hub: HubDouble):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, body: bytes = b"", headers: Optional[dict] = None,
                  content_type: str = "application/json"):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _error(self, code: int, message: str):
            self._send(code, json.dumps({"error": message}).encode(),
                       {"X-Error-Message": message})

        def _authorized(self, repo: Repo) -> bool:
            got = self.headers.get("Authorization")
            if hub.token is None and not repo.private:
                return True
            return got == f"Bearer {hub.token}"

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            with hub.lock:
                hub.requests.append((self.command, url.path, "Authorization" in self.headers))
            parts = url.path.split("/")
            try:
                if url.path.startswith("/api/models/"):
                    return self._api(parts[3:], urllib.parse.parse_qs(url.query))
                if url.path.startswith("/cdn/"):
                    return self._cdn(parts[2:])
                if len(parts) >= 6 and parts[3] == "resolve":
                    return self._resolve(parts[1:])
            except BrokenPipeError:
                return
            self._error(404, "Not Found")

        # /api/models/{owner}/{name}/revision/{rev} | /tree/{rev}[/{path}]
        def _api(self, rest: List[str], query):
            if len(rest) == 2:  # model_info without a revision: the default branch
                rest = rest + ["revision", "main"]
            if len(rest) < 4:
                return self._error(404, "Repository not found")
            repo = hub.repos.get(f"{rest[0]}/{rest[1]}")
            if repo is None:
                return self._error(404, "Repository not found")
            if not self._authorized(repo):
                return self._error(401, "Invalid credentials in Authorization header")
            kind, rev = rest[2], urllib.parse.unquote(rest[3])
            commit = repo.resolve(rev)
            if commit is None:
                return self._error(404, f"Invalid rev id: {rev}")
            if kind == "revision":
                body = {"id": repo.repo_id, "modelId": repo.repo_id, "sha": commit, "private": repo.private,
                        "siblings": [{"rfilename": p} for p in sorted(repo.files)]}
                return self._send(200, json.dumps(body).encode())
            if kind == "tree":
                if hub.fail_tree_once:
                    hub.fail_tree_once = False
                    return self._error(500, "Internal Error")
                under = urllib.parse.unquote("/".join(rest[4:]))
                recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
                entries = repo.tree(under, recursive)
                start = int(query.get("cursor", ["0"])[0])
                page = entries[start:start + hub.page_size]
                headers = {}
                if start + hub.page_size < len(entries):
                    q = {k: v[0] for k, v in query.items()}
                    q["cursor"] = str(start + hub.page_size)
                    # absolute, as the hub sends it: huggingface_hub requests the URL as given
                    nxt = f"{hub.url}{self.path.split('?')[0]}?{urllib.parse.urlencode(q)}"
                    headers["Link"] = f'<{nxt}>; rel="next"'
                return self._send(200, json.dumps(page).encode(), headers)
            return self._error(404, "Not Found")

        # /{owner}/{name}/resolve/{rev}/{path...}
        def _resolve(self, parts: List[str]):
            repo = hub.repos.get(f"{parts[0]}/{parts[1]}")
            if repo is None:
                return self._error(404, "Repository not found")
            if not self._authorized(repo):
                return self._error(401, "Invalid credentials in Authorization header")
            commit = repo.resolve(urllib.parse.unquote(parts[3]))
            path = urllib.parse.unquote("/".join(parts[4:]))
            if commit is None or path not in repo.files or path in hub.missing:
                return self._error(404, "Entry not found")
            entry = repo.entry(path)
            headers = {"X-Repo-Commit": commit, "ETag": f'"{entry["oid"]}"'}
            if repo.is_lfs(path):
                sha = entry["lfs"]["oid"]
                headers.update({"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(entry["size"]),
                                "Location": f"{hub.cdn_url}/cdn/{repo.repo_id}/{sha}/"
                                            f"{urllib.parse.quote(path, safe='/')}"})
                return self._send(302, b"", headers, "text/plain")
            return self._content(repo, path, headers)

        # /cdn/{owner}/{name}/{sha256}/{path...}: the CDN a download redirects to
        def _cdn(self, parts: List[str]):
            if "Authorization" in self.headers:
                # the hub's token must never leave the hub
                return self._error(400, "Authorization header sent to the CDN")
            repo = hub.repos.get(f"{parts[0]}/{parts[1]}")
            path = urllib.parse.unquote("/".join(parts[3:]))
            if repo is None or path not in repo.files:
                return self._error(404, "NoSuchKey")
            return self._content(repo, path, {"ETag": f'"{parts[2]}"'})

        def _content(self, repo: Repo, path: str, headers: dict):
            body = repo.files[path]
            if path in hub.corrupt:
                body = bytes(b ^ 0xFF for b in body[:16]) + body[16:]
            start, status = 0, 200
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-")[0] or 0)
                status = 206
                headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
            body = body[start:]
            cut = None
            if self.command == "GET":
                with hub.lock:
                    hub.served[path] = hub.served.get(path, 0) + 1
                    cut = hub.truncate_once.pop(path, None)
            if cut is None:
                return self._send(status, body, headers, "application/octet-stream")
            # promise the whole body, send part of it, drop the connection
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    return Handler
