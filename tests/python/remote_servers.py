"""Servers for the remote-source tests (tests/python/test_remote.py), all on 127.0.0.1 with free ports,
started by the fixtures and always stopped:

- `nginx` (session): Debian's nginx serving a temporary document root (static files: Range, ETag,
  If-Range and If-Match as nginx does them). `.root`, `.url(rel)`, `.put(rel, data)`, `.log()`.
  `nginx_tls` (session): the same over HTTPS, with a self-signed certificate (`.tls[0]`).
- `moto` (session) and `s3` (per test): moto_server as an S3 endpoint with one bucket; `s3` also sets
  AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION for the test.
  `.put(key, data)`, `.url(key)` ("s3://bucket/key").
- `fault_http` (per test): the tests' own HTTP/1.1 server (http.server in a thread) serving a
  directory with single ranges, ETags, If-Range and If-Match, plus faults set per test (failing
  statuses, connections dropped mid-body, truncated bodies, a lying HEAD, an object that changes,
  404s) and counters of requests and body bytes per path.

Only the standard library and pytest: conftest.py imports the fixtures from here."""
import dataclasses
import email.utils
import hashlib
import http.client
import http.server
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

HOST = "127.0.0.1"
BUCKET = "wl-test"
# moto checks no signature, but answers 403 to a request with no Authorization header for an object
# whose ACL is private (every object here): the harness's own requests carry this dummy one.
DUMMY_AUTH = ("AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/s3/aws4_request, "
              "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64)
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _tail(path, n=3000):
    try:
        return pathlib.Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return ""


def _stop_group(proc, first=signal.SIGTERM, timeout=10.0):
    """Stops a process started with start_new_session=True and everything left in its process group."""
    pgid = proc.pid
    if proc.poll() is None:
        try:
            os.killpg(pgid, first)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + timeout
    while True:  # children (nginx's workers) may outlive the leader for a moment
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            break
        if time.monotonic() > deadline:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + timeout
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _put_bytes(dest, data):
    dest = pathlib.Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, (str, os.PathLike)):
        src = pathlib.Path(data)
        tmp = dest.with_name(dest.name + ".tmp")
        try:
            os.link(src, tmp)  # no copy of big files
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    else:
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.write_bytes(bytes(data))
        os.replace(tmp, dest)
    return dest


def _as_bytes(data):
    if isinstance(data, (str, os.PathLike)):
        return pathlib.Path(data).read_bytes()
    return bytes(data)


# --------------------------------------------------------------------------------------------------
# nginx

NGINX_CONF = """\
worker_processes 1;
daemon off;
{user}pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
    default_type application/octet-stream;
    log_format wl '$request_method\\t$uri\\t$http_range\\t$status\\t$body_bytes_sent\\t$http_if_range\\t$http_if_match';
    access_log {prefix}/logs/access.log wl;
    client_body_temp_path {prefix}/tmp/client_body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    keepalive_timeout 30s;
    server {{
        listen {host}:{port}{ssl};
        server_name localhost;{tls}
        root {root};
        autoindex off;
    }}
}}
"""


@dataclasses.dataclass
class LogEntry:
    method: str
    path: str
    range: str
    status: int
    sent: int
    if_range: str = ""
    if_match: str = ""


class Nginx:
    """nginx as a subprocess (daemon off, one worker) in its own process group, all of its files
    (configuration, pid, logs, temp paths, document root) under `prefix`."""

    def __init__(self, prefix, tls=None, limit_rate=None):
        self.prefix = pathlib.Path(prefix)
        self.tls = tls  # (certificate, key) paths: HTTPS
        self.limit_rate = limit_rate  # bytes/s per connection (nginx limit_rate), as a CDN may allow
        self.root = self.prefix / "html"
        self.port = None
        self.proc = None
        self.startup_seconds = None
        self.exe = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)

    def start(self, attempts=5):
        t0 = time.monotonic()
        for d in (self.root, self.prefix / "logs", self.prefix / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        last = ""
        for _ in range(attempts):  # a free port may be taken again before nginx binds it
            self.port = free_port()
            conf = self.prefix / "nginx.conf"
            # As root, the worker would run as `nobody`, who cannot read a 0700 temp dir.
            user = "user root;\n" if os.geteuid() == 0 else ""
            tls = (f"\n        ssl_certificate {self.tls[0]};\n        ssl_certificate_key {self.tls[1]};"
                   if self.tls else "")
            if self.limit_rate:
                tls += f"\n        limit_rate {int(self.limit_rate)};"
            conf.write_text(NGINX_CONF.format(user=user, prefix=self.prefix, host=HOST, port=self.port,
                                              root=self.root, ssl=" ssl" if self.tls else "", tls=tls))
            out = open(self.prefix / "logs" / "stdout.log", "ab")
            self.proc = subprocess.Popen([self.exe, "-p", str(self.prefix), "-c", str(conf),
                                          "-e", str(self.prefix / "logs" / "error.log")],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=self.prefix)
            out.close()
            if _wait_listening(self.port, self.proc, 15.0):
                self.startup_seconds = time.monotonic() - t0
                return self
            last = _tail(self.prefix / "logs" / "error.log") + _tail(self.prefix / "logs" / "stdout.log")
            _stop_group(self.proc)
        raise RuntimeError(f"nginx did not start: {last}")

    def stop(self):
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGTERM)  # TERM: fast shutdown; QUIT would wait for keep-alives
            self.proc = None

    def url(self, rel=""):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{HOST}:{self.port}/{urllib.parse.quote(str(rel).lstrip('/'))}"

    def put(self, rel, data):
        """Writes `data` (bytes, or a path to link or copy) at root/rel, atomically; returns its URL."""
        _put_bytes(self.root / rel, data)
        return self.url(rel)

    def log(self):
        """The access log so far (nginx writes each line when the request ends), parsed."""
        entries = []
        for line in _tail(self.prefix / "logs" / "access.log", 10**9).splitlines():
            f = line.split("\t")
            if len(f) >= 5:
                g = [("" if x == "-" else x) for x in f]
                entries.append(LogEntry(g[0], g[1].lstrip("/"), g[2], int(f[3]), int(f[4]), *g[5:7]))
        return entries


def _wait_listening(port, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def running_nginx(server):
    """Starts `server` for a fixture and stops it afterwards; skips when nginx is not installed."""
    if server.exe is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx; looked for nginx on PATH and /usr/sbin/nginx)")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    yield from running_nginx(Nginx(tmp_path_factory.mktemp("nginx")))


@pytest.fixture(scope="session")
def nginx_tls(tmp_path_factory):
    """nginx over HTTPS with a self-signed certificate for 127.0.0.1 (made by `openssl req`);
    `.tls[0]` is the certificate, the CA bundle a client must be given."""
    prefix = tmp_path_factory.mktemp("nginx-tls")
    cert, key = prefix / "cert.pem", prefix / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (Debian: apt-get install openssl)")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-addext", f"subjectAltName=IP:{HOST}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    yield from running_nginx(Nginx(prefix, tls=(cert, key)))


# --------------------------------------------------------------------------------------------------
# moto (S3)

def moto_command():
    """The moto_server executable, or None. A pyenv shim is resolved to the real script (the shim
    depends on the working directory's .python-version and adds two shells)."""
    exe = shutil.which("moto_server")
    if exe is None:
        return None
    if "/shims/" in exe:
        pyenv = shutil.which("pyenv") or str(pathlib.Path(exe).parents[1] / "bin" / "pyenv")
        try:
            real = subprocess.run([pyenv, "which", "moto_server"], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
            if real and os.access(real, os.X_OK):
                exe = real
        except (OSError, subprocess.SubprocessError):
            pass
    return exe


class Moto:
    """moto_server in its own process group; one bucket, objects put with plain (dummy-signed) HTTP."""

    def __init__(self, workdir, bucket=BUCKET):
        self.workdir = pathlib.Path(workdir)
        self.bucket = bucket
        self.exe = moto_command()
        self.port = None
        self.proc = None
        self.startup_seconds = None

    @property
    def endpoint(self):
        return f"http://{HOST}:{self.port}"

    def start(self, attempts=3):
        t0 = time.monotonic()
        last = ""
        for _ in range(attempts):
            self.port = free_port()
            log = self.workdir / "moto.log"
            out = open(log, "ab")
            self.proc = subprocess.Popen([self.exe, "-H", HOST, "-p", str(self.port)], stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         cwd=self.workdir)
            out.close()
            if self._wait_ready(60.0):
                status, _, body = self.request("PUT", f"/{self.bucket}")
                if status != 200:
                    raise RuntimeError(f"moto: creating bucket {self.bucket} answered {status}: {body[:300]!r}")
                self.startup_seconds = time.monotonic() - t0
                return self
            last = _tail(log)
            _stop_group(self.proc)
        raise RuntimeError(f"moto_server did not start: {last}")

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                status, _, _ = self.request("GET", "/", timeout=2)
                if status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGTERM)
            self.proc = None

    def request(self, method, path, body=None, headers=None, auth=True, timeout=30):
        """One request to moto: (status, headers as a lower-cased dict, body)."""
        h = {"Host": f"{HOST}:{self.port}"}
        if auth:
            h["Authorization"] = DUMMY_AUTH
            h["x-amz-date"] = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        if body is not None:
            h["Content-Type"] = "application/octet-stream"  # not form-encoded: moto would eat the body
            h["Content-Length"] = str(len(body))
        h.update(headers or {})
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def put(self, key, data):
        """Puts an object (bytes or a file's path) at `key`; returns its s3:// URL."""
        data = _as_bytes(data)
        status, _, body = self.request("PUT", f"/{self.bucket}/{urllib.parse.quote(key)}", body=data)
        if status != 200:
            raise RuntimeError(f"moto: PUT {key} answered {status}: {body[:300]!r}")
        return self.url(key)

    def delete(self, key):
        self.request("DELETE", f"/{self.bucket}/{urllib.parse.quote(key)}")

    def url(self, key=""):
        return f"s3://{self.bucket}/{key}"

    def env(self):
        return {"AWS_ENDPOINT_URL": self.endpoint, **S3_ENV}


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    if moto_command() is None:
        pytest.skip("moto_server is not on PATH (pip install 'moto[server]'): the S3 tests need it")
    server = Moto(tmp_path_factory.mktemp("moto"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3(moto, monkeypatch):
    """The session's moto server, with the environment the library reads set for this test (and
    restored after it); AWS_PROFILE and the like are removed so nothing else is consulted."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3",
                 "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    return moto


# --------------------------------------------------------------------------------------------------
# The fault-injecting HTTP server

@dataclasses.dataclass
class Request:
    """One request the fault server answered."""
    method: str
    path: str
    range: str | None        # the Range header as sent
    if_range: str | None
    if_match: str | None
    authorization: str | None = None  # the Authorization header, when one was sent
    status: int = 0
    start: int | None = None  # the byte range served (inclusive end), for a 200 or 206 with a body
    end: int | None = None
    sent: int = 0             # body bytes written
    fault: str | None = None  # "status", "drop", "truncate", "changed", "lie", "404"


@dataclasses.dataclass
class _Rule:
    kind: str
    path: str | None = None   # None: every path
    times: int | None = None  # None: forever
    after: int = 0            # the rule applies to a path's GETs numbered after this
    status: int = 500
    keep: float = 0.5
    rst: bool = False
    delta: int = 0
    data: bytes = b""
    min_offset: int = 0

    def matches(self, path):
        return self.path is None or self.path == path


def _norm(path):
    return str(path).lstrip("/")


_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "wl-fault/1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.owner._serve(self, "GET")

    def do_HEAD(self):
        self.server.owner._serve(self, "HEAD")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner, *a, **kw):
        self.owner = owner
        super().__init__(*a, **kw)

    def process_request(self, request, client_address):
        with self.owner._lock:
            self.owner._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.owner._lock:
            self.owner._conns.discard(request)
        super().shutdown_request(request)


class FaultServer:
    """Serves the files under `root` at http://127.0.0.1:PORT/<relative path>, with faults.

    Objects: GET with a single `bytes=a-b`, `bytes=a-` or `bytes=-n` range answers 206 with
    Content-Range (several ranges: 200 with the whole body; unsatisfiable: 416); HEAD gives
    Content-Length, ETag, Last-Modified and Accept-Ranges. If-Match that does not match: 412; an
    If-Range that does not match (the ETag or the Last-Modified date): 200 with the whole body, as
    nginx does. A directory answers 403 (nginx without autoindex), a missing file 404. Every answer
    carries Content-Length; connections are kept alive (HTTP/1.1) unless a fault closes them.

    Faults (each takes path=None for every path, or a relative path; set any time, cleared by reset()):
      fail(n, status)          the first n requests answer `status` (429 comes with Retry-After: 0);
                               n=None: forever
      drop_mid_body(after, times)  GETs of a path numbered after `after` (per path, 1-based): headers
                               with the full Content-Length, half the body, then the connection is
                               closed (rst=True: reset instead of a clean close); `times` of them
                               (None: every one)
      truncate_body(after, times, keep)  the same with a clean close after `keep` of the body
      lie_head_length(path, delta)  HEAD says Content-Length + delta
      change_after_first_range(path, data, after=1, min_offset=0)  after the first (`after`-th)
                               ranged GET of `path` (starting at min_offset or later) is answered,
                               the object is `data` (new bytes, new ETag)
      not_found(path)          404 whatever is there

    Counters: requests(path, method), count(path, method), bytes_sent(path), gets(path)."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conns = set()
        self._rules = []
        self._overrides = {}   # path -> (bytes, etag)
        self._gets = {}        # path -> GETs seen
        self._log = []
        self._httpd = _Server(self, (HOST, 0), _Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fault-http-{self.port}", daemon=True)

    # -- life

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:  # unblock handler threads waiting on kept-alive connections
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- content

    def url(self, rel=""):
        return f"http://{HOST}:{self.port}/{urllib.parse.quote(_norm(rel))}"

    def put(self, rel, data):
        """Writes `data` (bytes, or a path to link or copy) at root/rel; returns its URL."""
        _put_bytes(self.root / rel, data)
        return self.url(rel)

    # -- faults

    def reset(self):
        with self._lock:
            self._rules.clear()
            self._overrides.clear()
            self._gets.clear()
            self._log.clear()

    def _add(self, rule):
        with self._lock:
            self._rules.append(rule)
        return rule

    def fail(self, n=1, status=500, path=None):
        return self._add(_Rule("status", _norm(path) if path else None, n, status=status))

    def drop_mid_body(self, after=0, times=1, path=None, rst=False):
        return self._add(_Rule("drop", _norm(path) if path else None, times, after, keep=0.5, rst=rst))

    def truncate_body(self, after=0, times=None, path=None, keep=0.75):
        return self._add(_Rule("truncate", _norm(path) if path else None, times, after, keep=keep))

    def lie_head_length(self, path, delta):
        return self._add(_Rule("lie", _norm(path), None, delta=delta))

    def change_after_first_range(self, path, data, after=1, min_offset=0):
        """After the `after`-th ranged GET of `path` starting at min_offset or later is answered,
        the object is `data` (new bytes, new ETag, a later Last-Modified)."""
        return self._add(_Rule("change", _norm(path), 1, after=after, data=_as_bytes(data),
                                min_offset=min_offset))

    def not_found(self, path):
        return self._add(_Rule("404", _norm(path), None))

    # -- counters

    def requests(self, path=None, method=None):
        with self._lock:
            return [r for r in self._log if (path is None or r.path == _norm(path))
                    and (method is None or r.method == method)]

    def count(self, path=None, method=None):
        return len(self.requests(path, method))

    def bytes_sent(self, path=None):
        return sum(r.sent for r in self.requests(path))

    def gets(self, path=None):
        return self.requests(path, "GET")

    # -- serving

    def _take(self, kind, path, get_index=None):
        """The first live rule of `kind` for `path` (its use counted), or None."""
        with self._lock:
            for rule in self._rules:
                if rule.kind != kind or not rule.matches(path):
                    continue
                if get_index is not None and get_index <= rule.after:
                    continue
                if rule.times is not None:
                    if rule.times <= 0:
                        continue
                    rule.times -= 1
                return rule
        return None

    def _count_change(self, path, start):
        """The change rule for `path` if this ranged GET (at `start`) is the one it waits for."""
        with self._lock:
            for rule in self._rules:
                if rule.kind != "change" or not rule.matches(path) or not rule.times or start < rule.min_offset:
                    continue
                rule.after -= 1
                if rule.after <= 0:
                    rule.times = 0
                    return rule
        return None

    def _object(self, path):
        """(size, etag, last_modified, read(start, stop)) of the object at `path`, or an HTTP status."""
        with self._lock:
            ov = self._overrides.get(path)
        if ov is not None:
            data, etag, mtime = ov
            return len(data), etag, mtime, lambda a, b: data[a:b]
        p = self.root / path
        if ".." in pathlib.PurePosixPath(path).parts:
            return 403
        if p.is_dir() or path == "" or path.endswith("/"):
            return 403
        try:
            st = p.stat()
        except OSError:
            return 404

        def read(a, b):
            with open(p, "rb") as f:
                f.seek(a)
                return f.read(b - a)
        return st.st_size, f'"{st.st_mtime_ns:x}-{st.st_size:x}"', email.utils.formatdate(st.st_mtime, usegmt=True), read

    def _serve(self, h, method):
        path = _norm(urllib.parse.unquote(urllib.parse.urlsplit(h.path).path))
        rec = Request(method, path, h.headers.get("Range"), h.headers.get("If-Range"), h.headers.get("If-Match"),
                      h.headers.get("Authorization"))
        with self._lock:
            self._log.append(rec)
            if method == "GET":
                self._gets[path] = self._gets.get(path, 0) + 1
            get_index = self._gets.get(path, 0)
        try:
            self._answer(h, method, path, rec, get_index)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            h.close_connection = True

    def _simple(self, h, rec, status, body=b"", extra=None):
        rec.status = status
        h.send_response(status)
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if rec.method != "HEAD" and body:
            h.wfile.write(body)

    def _answer(self, h, method, path, rec, get_index):
        rule = self._take("status", path)
        if rule is not None:
            rec.fault = "status"
            extra = {"Retry-After": "0"} if rule.status in (429, 503) else {}
            self._simple(h, rec, rule.status, f"injected {rule.status}\n".encode(), extra)
            return
        if self._take("404", path) is not None:
            rec.fault = "404"
            self._simple(h, rec, 404, b"not found (injected)\n")
            return
        obj = self._object(path)
        if isinstance(obj, int):
            self._simple(h, rec, obj, f"{obj}\n".encode())
            return
        size, etag, mtime, read = obj
        common = {"ETag": etag, "Last-Modified": mtime, "Accept-Ranges": "bytes",
                  "Content-Type": "application/octet-stream"}

        if method == "HEAD":
            lie = self._take("lie", path)
            rec.fault = "lie" if lie else None
            rec.status = 200
            h.send_response(200)
            for k, v in common.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(size + (lie.delta if lie else 0)))
            h.end_headers()
            return

        if_match = h.headers.get("If-Match")
        if if_match is not None:
            tags = [t.strip() for t in if_match.split(",")]
            if "*" not in tags and etag not in tags:
                self._simple(h, rec, 412, b"precondition failed\n", {"ETag": etag})
                return

        start, end, status = 0, size - 1, 200
        rng = h.headers.get("Range")
        if rng is not None:
            if_range = h.headers.get("If-Range")
            honoured = if_range is None or if_range.strip() in (etag, mtime)
            m = _RANGE.match(rng)
            if honoured and m and (m.group(1) or m.group(2)):
                a, b = m.group(1), m.group(2)
                if a == "":  # suffix: the last n bytes
                    n = int(b)
                    start, end = max(0, size - n), size - 1
                    ok = n > 0
                else:
                    start = int(a)
                    end = min(int(b), size - 1) if b else size - 1
                    ok = start < size and (not b or int(b) >= start)
                if not ok:
                    self._simple(h, rec, 416, b"range not satisfiable\n", {"Content-Range": f"bytes */{size}", "ETag": etag})
                    return
                status = 206
            # several ranges, a malformed one, or a stale If-Range: the whole object, 200

        length = end - start + 1 if size else 0
        rec.status, rec.start, rec.end = status, start, (end if size else None)
        h.send_response(status)
        for k, v in common.items():
            h.send_header(k, v)
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        h.send_header("Content-Length", str(length))
        h.end_headers()

        cut = None
        for kind in ("drop", "truncate"):
            rule = self._take(kind, path, get_index)
            if rule is not None and length > 0:
                rec.fault = kind
                cut = (int(length * rule.keep), rule)
                break
        limit = cut[0] if cut else length
        pos = start
        stop = start + limit
        while pos < stop:
            n = min(1 << 18, stop - pos)
            chunk = read(pos, pos + n)
            if not chunk:
                break
            h.wfile.write(chunk)
            rec.sent += len(chunk)
            pos += len(chunk)
        if cut:
            h.close_connection = True
            h.wfile.flush()
            conn = h.connection
            if cut[1].rst:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()
            else:
                try:
                    conn.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        if status == 206:
            rule = self._count_change(path, start)
            if rule is not None:
                digest = hashlib.sha1(rule.data).hexdigest()[:16]
                with self._lock:
                    self._overrides[path] = (rule.data, f'"changed-{digest}"',
                                             email.utils.formatdate(time.time() + 60, usegmt=True))
                rec.fault = rec.fault or "changed"


@pytest.fixture
def fault_http(tmp_path):
    """A fault server of this test's own, serving tmp_path/"fault-root"; stopped after the test."""
    with FaultServer(tmp_path / "fault-root") as server:
        yield server
