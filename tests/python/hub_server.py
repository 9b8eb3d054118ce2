"""A fake Hugging Face hub for the download tests (test_hub.py), on loopback ports.

The hub answers the API (`GET /api/models/{repo}/revision/{rev}`: the commit sha and siblings;
`/api/models/{repo}/tree/{rev}`: the files with their sizes and digests, one page) and
`/{repo}/resolve/{rev}/{path}`: small files are served by the hub itself (ETag: the git blob sha1,
X-Repo-Commit), LFS files (*.safetensors, *.bin) answer HEAD and GET with a 302 to a second server,
the "CDN" (a FaultServer: ranges, If-Range, dropped connections, changes), with X-Linked-Etag (the
sha256) and X-Linked-Size. Every request to either is logged with its Authorization header."""
import dataclasses
import hashlib
import http.server
import json
import threading
import urllib.parse

from remote_servers import HOST, FaultServer

TOKEN = "hf_test_token"


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path):
    return path.endswith((".safetensors", ".bin"))


@dataclasses.dataclass
class HubRequest:
    method: str
    path: str
    authorization: str | None


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.hub._serve(self, "GET")

    def do_HEAD(self):
        self.server.hub._serve(self, "HEAD")


class FakeHub:
    """cdn: any server with start/stop/put/url (nginx for the benchmark); default a FaultServer at cdn_root."""

    def __init__(self, cdn_root, cdn=None):
        self.cdn = cdn or FaultServer(cdn_root)
        self.repos = {}  # repo id -> (commit, {path: bytes}, {branch})
        self.log = []
        self.fail_next = []  # statuses the next hub requests answer
        self.require_token = False
        self._lock = threading.Lock()
        self._digest_cache = {}  # LFS bytes -> (sha256, git blob sha1)
        self._httpd = http.server.ThreadingHTTPServer((HOST, 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.hub = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self):
        return f"http://{HOST}:{self.port}"

    def start(self):
        self.cdn.start()
        self._thread.start()
        return self

    def stop(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self.cdn.stop()

    def add_repo(self, repo, files, branch="main"):
        """Serves `files` ({path: bytes}) as `repo` at `branch`; returns the commit sha."""
        commit = hashlib.sha1(repr(sorted((p, git_blob_sha1(d)) for p, d in files.items())).encode()).hexdigest()
        self.repos[repo] = (commit, dict(files), branch)
        for path, data in files.items():
            if is_lfs(path):
                self.cdn.put(hashlib.sha256(data).hexdigest(), data)
        return commit

    def _digests(self, data):
        """(sha256, git blob sha1) of an LFS file's bytes, computed once: a real hub does not hash
        a file per request, and hashing hundreds of MiB per HEAD would be counted as our time."""
        with self._lock:
            found = self._digest_cache.get(data)
        if found is None:
            found = (hashlib.sha256(data).hexdigest(), git_blob_sha1(data))
            with self._lock:
                self._digest_cache[data] = found
        return found

    def etag(self, repo, path):
        data = self.repos[repo][1][path]
        return hashlib.sha256(data).hexdigest() if is_lfs(path) else git_blob_sha1(data)

    def corrupt_on_cdn(self, repo, path):
        """The CDN serves other bytes (same size) under the file's sha256."""
        data = self.repos[repo][1][path]
        self.cdn.put(self.etag(repo, path), bytes(b ^ 0xFF for b in data))

    def requests(self, method=None, contains=""):
        with self._lock:
            return [r for r in self.log if (method is None or r.method == method) and contains in r.path]

    def _send(self, h, status, body=b"", headers=None):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD" and body:
            h.wfile.write(body)

    def _serve(self, h, method):
        path = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path)
        with self._lock:
            self.log.append(HubRequest(method, path, h.headers.get("Authorization")))
            status = self.fail_next.pop(0) if self.fail_next else None
        if status:
            return self._send(h, status, b"injected\n")
        if self.require_token and h.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(h, 401, b"unauthorized\n")
        parts = path.lstrip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
            repo, rev = "/".join(parts[2:4]), "/".join(parts[5:])
            found = self._find(repo, rev)
            if found is None:
                return self._send(h, 404, b'{"error": "Repository not found"}')
            commit, files = found
            body = json.dumps({"id": repo, "sha": commit, "siblings": [{"rfilename": p} for p in sorted(files)]}).encode()
            return self._send(h, 200, body, {"Content-Type": "application/json"})
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
            # huggingface_hub's list_repo_tree (vLLM lists a repo's files with it): one page, every file
            found = self._find("/".join(parts[2:4]), "/".join(parts[5:]))
            if found is None:
                return self._send(h, 404, b'{"error": "Repository not found"}')
            entries = []
            for p, data in sorted(found[1].items()):
                entry = {"type": "file", "path": p, "size": len(data), "oid": git_blob_sha1(data)}
                if is_lfs(p):
                    entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                entries.append(entry)
            return self._send(h, 200, json.dumps(entries).encode(), {"Content-Type": "application/json"})
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, rev, file = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
            found = self._find(repo, rev)
            if found is None or file not in found[1]:
                return self._send(h, 404, b"Entry not found\n")
            commit, files = found
            data = files[file]
            headers = {"X-Repo-Commit": commit}
            if is_lfs(file):
                sha, blob_sha1 = self._digests(data)
                headers.update({"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data)), "ETag": f'"{blob_sha1}"',
                                "Location": self.cdn.url(sha)})
                return self._send(h, 302, b"", headers)
            return self._serve_small(h, data, headers)
        return self._send(h, 404, b"not found\n")

    def _serve_small(self, h, data, headers):
        headers = dict(headers, ETag=f'"{git_blob_sha1(data)}"', **{"Accept-Ranges": "bytes"})
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and h.headers.get("If-Range", headers["ETag"]) == headers["ETag"]:
            a, _, b = rng[6:].partition("-")
            start, end = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
            body = data[start:end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            h.send_response(206)
        else:
            body = data
            h.send_response(200)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def _find(self, repo, rev):
        if repo not in self.repos:
            return None
        commit, files, branch = self.repos[repo]
        return (commit, files) if rev in (commit, branch) else None
