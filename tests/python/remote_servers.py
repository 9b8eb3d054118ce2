"""Servers for the remote-source tests (tests/python/test_remote.py), all on 127.0.0.1 with free ports,
started by the fixtures and always stopped:

- `nginx` (session): Debian's nginx serving a temporary document root (static files: Range, ETag,
  If-Range and If-Match as nginx does them). `.root`, `.url(rel)`, `.put(rel, data)`, `.log()`.
  `nginx_tls` (session): the same over HTTPS, with a self-signed certificate (`.tls[0]`).
- `moto` (session) and `s3` (per test): moto_server as an S3 endpoint with one bucket and IAM
  authentication on (signatures checked against IAM users it is given at start, policies applied);
  `s3` also sets AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION for the test.
  `s3rver` (session): s3rver (npm) as a second, independent S3; `any_s3` (per test): each of the two.
  `.put(key, data)`, `.url(key)` ("s3://bucket/key"); the harness signs its own requests (SigV4).
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
import hmac
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

HOST = "127.0.0.1"
BUCKET = "wl-test"
# moto without authentication (bench/remote_stream.py) takes any key; these are the ones used there.
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
    log_format wl '$request_method\\t$uri\\t$http_range\\t$status\\t$body_bytes_sent\\t$http_if_range\\t$http_if_match\\t$server_port';
    access_log {prefix}/logs/access.log wl;
    client_body_temp_path {prefix}/tmp/client_body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    keepalive_timeout 30s;
    server {{
        listen {host}:{port}{ssl};{extra_listen}
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
    port: int = 0  # the port the request came in on (Nginx.extra_ports tell clients apart)


class Nginx:
    """nginx as a subprocess (daemon off, one worker) in its own process group, all of its files
    (configuration, pid, logs, temp paths, document root) under `prefix`."""

    def __init__(self, prefix, tls=None, limit_rate=None, extra_ports=0):
        self.prefix = pathlib.Path(prefix)
        # More ports serving the same root, for telling clients apart in the log (LogEntry.port): a
        # client sent through one as its proxy (http_proxy=http://127.0.0.1:PORT) is logged under it.
        self.extra_ports_wanted = extra_ports
        self.extra_ports = []
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
            self.extra_ports = [free_port() for _ in range(self.extra_ports_wanted)]
            extra = "".join(f"\n        listen {HOST}:{p}{' ssl' if self.tls else ''};" for p in self.extra_ports)
            conf = self.prefix / "nginx.conf"
            # As root, the worker would run as `nobody`, who cannot read a 0700 temp dir.
            user = "user root;\n" if os.geteuid() == 0 else ""
            tls = (f"\n        ssl_certificate {self.tls[0]};\n        ssl_certificate_key {self.tls[1]};"
                   if self.tls else "")
            if self.limit_rate:
                tls += f"\n        limit_rate {int(self.limit_rate)};"
            conf.write_text(NGINX_CONF.format(user=user, prefix=self.prefix, host=HOST, port=self.port,
                                              root=self.root, ssl=" ssl" if self.tls else "", tls=tls,
                                              extra_listen=extra))
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
        """The access log so far, parsed. nginx writes a request's line only after it has sent the
        answer, which the client may already have used: the file is read until it holds still for
        50 ms (2 s at most)."""
        text, deadline = None, time.monotonic() + 2
        while True:
            now = _tail(self.prefix / "logs" / "access.log", 10**9)
            if now == text or time.monotonic() > deadline:
                break
            text = now
            time.sleep(0.05)
        entries = []
        for line in now.splitlines():
            f = line.split("\t")
            if len(f) >= 5:
                g = [("" if x == "-" else x) for x in f]
                entries.append(LogEntry(g[0], g[1].lstrip("/"), g[2], int(f[3]), int(f[4]), *g[5:7],
                                        *[int(x) for x in f[7:8]]))
        return entries


class DelayProxy:
    """TCP forwarders on 127.0.0.1 that add latency: each of `.ports` forwards to one of `targets`
    (ports), every chunk delivered `one_way` seconds after it arrived, in both directions, so that a
    request waits 2 x one_way more for its answer (a round trip across a network) while bytes still
    flow at loopback speed. An asyncio loop in a thread of this process; `.start()`, `.stop()`."""

    def __init__(self, targets, one_way):
        self.targets = list(targets)
        self.one_way = float(one_way)
        self.ports = []
        self._loop = None
        self._thread = None
        self._servers = []

    def start(self):
        import asyncio
        ready = threading.Event()

        async def pipe(reader, writer):
            loop = asyncio.get_running_loop()
            queue = asyncio.Queue()

            async def deliver():
                while True:
                    due, data = await queue.get()
                    if due > loop.time():
                        await asyncio.sleep(due - loop.time())
                    if not data:
                        break
                    writer.write(data)
                    await writer.drain()
                if writer.can_write_eof():
                    writer.write_eof()

            sender = asyncio.ensure_future(deliver())
            try:
                while data := await reader.read(1 << 16):
                    queue.put_nowait((loop.time() + self.one_way, data))
            except (ConnectionError, OSError):
                pass
            queue.put_nowait((loop.time() + self.one_way, b""))
            try:
                await sender
            except (ConnectionError, OSError):
                pass

        def serve(target):
            async def on_client(client_reader, client_writer):
                try:
                    server_reader, server_writer = await asyncio.open_connection(HOST, target)
                except OSError:
                    client_writer.close()
                    return
                await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))
                for w in (client_writer, server_writer):
                    w.close()
            return on_client

        async def main():
            for target in self.targets:
                server = await asyncio.start_server(serve(target), HOST, 0)
                self._servers.append(server)
                self.ports.append(server.sockets[0].getsockname()[1])
            ready.set()

        self._loop = asyncio.new_event_loop()

        def run():
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(main())
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the delaying proxy did not start")
        return self

    def stop(self):
        if self._loop is None:
            return

        async def close():
            for server in self._servers:
                server.close()  # no wait_closed: it would wait for idle keep-alive connections
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        import asyncio
        asyncio.run_coroutine_threadsafe(close(), self._loop)
        self._thread.join(10)
        self._loop.close()
        self._loop = None


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
# S3 (moto and s3rver), the harness's own requests signed with AWS Signature V4

@dataclasses.dataclass
class Credentials:
    key: str
    secret: str
    token: str = ""

    def env(self):
        """The environment variables that give these credentials to the library."""
        return {"AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
                **({"AWS_SESSION_TOKEN": self.token} if self.token else {})}


def sigv4_headers(method, host, path, creds, region="us-east-1", service="s3", body=b"", headers=None):
    """`headers` plus what signs the request with AWS Signature V4, as the AWS SDKs send it: host,
    x-amz-date, x-amz-content-sha256 (the body's sha256), x-amz-security-token for a session
    token, and an Authorization header signing all of them. `path` is as sent (escaped), with its query."""
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    day = amz_date[:8]
    h = {k.lower(): str(v).strip() for k, v in (headers or {}).items()}
    h.update({"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    if creds.token:
        h["x-amz-security-token"] = creds.token
    url = urllib.parse.urlsplit(path)
    signed = ";".join(sorted(h))
    canonical = "\n".join([method, url.path or "/", canonical_query(url.query),
                           "".join(f"{k}:{h[k]}\n" for k in sorted(h)), signed, h["x-amz-content-sha256"]])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + creds.secret).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.key}/{scope}, SignedHeaders={signed}, "
                          f"Signature={signature}")
    return h


def canonical_query(query):
    """A query string as SigV4 signs it: each name and value escaped ('/' too), in order."""
    pairs = sorted((urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                   for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True))
    return "&".join(f"{k}={v}" for k, v in pairs)


def s3_error_code(body):
    """The <Code> of an S3 error document, or ""."""
    m = re.search(rb"<Code>([^<]*)</Code>", body or b"")
    return m.group(1).decode() if m else ""


class S3Server:
    """An S3 endpoint on 127.0.0.1 (a subprocess in its own process group) with one bucket; the
    harness's own requests are signed with `creds`. `.put(key, data)`, `.url(key)`
    ("s3://bucket/key"), `.env()` (what the library needs to reach it), `.request(...)`."""

    kind = "s3"
    region = "us-east-1"

    def __init__(self, workdir, bucket=BUCKET):
        self.workdir = pathlib.Path(workdir)
        self.bucket = bucket
        self.port = None
        self.proc = None
        self.startup_seconds = None
        self.creds = None

    @property
    def endpoint(self):
        return f"http://{HOST}:{self.port}"

    def _command(self):
        raise NotImplementedError

    def _ready(self):
        raise NotImplementedError

    def _provision(self):
        """What the server needs before its bucket is made (moto: users and keys)."""

    def start(self, attempts=3):
        t0 = time.monotonic()
        last = ""
        for _ in range(attempts):  # a free port may be taken again before the server binds it
            self.port = free_port()
            log = self.workdir / f"{self.kind}.log"
            out = open(log, "ab")
            self.proc = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True, cwd=self.workdir,
                                         env=self._environment())
            out.close()
            if self._wait_ready(60.0):
                try:
                    self._provision()
                    status, _, body = self.request("PUT", f"/{self.bucket}")
                    if status != 200:
                        raise RuntimeError(f"{self.kind}: creating bucket {self.bucket} answered {status}: {body[:300]!r}")
                except BaseException:
                    _stop_group(self.proc)  # never a server left running behind a failed start
                    raise
                self.startup_seconds = time.monotonic() - t0
                return self
            last = _tail(log)
            _stop_group(self.proc)
        raise RuntimeError(f"{self.kind} did not start: {last}")

    def _environment(self):
        return dict(os.environ)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if self._ready():
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc is not None:
            _stop_group(self.proc, signal.SIGTERM)
            self.proc = None

    def raw(self, method, path, body=None, headers=None, timeout=30):
        """One request as given (no signature): (status, headers as a lower-cased dict, body)."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def request(self, method, path, body=None, headers=None, creds=None, service="s3", timeout=30):
        """One request signed with `creds` (default: the server's own); its query is sent as signed."""
        url = urllib.parse.urlsplit(path)
        path = url.path + (f"?{canonical_query(url.query)}" if url.query else "")
        h = dict(headers or {})
        if body is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/octet-stream"  # not form-encoded: moto would eat the body
        h = sigv4_headers(method, f"{HOST}:{self.port}", path, creds or self.creds, self.region, service,
                          body or b"", h)
        return self.raw(method, path, body, h, timeout)

    def put(self, key, data):
        """Puts an object (bytes or a file's path) at `key`; returns its s3:// URL."""
        data = _as_bytes(data)
        status, _, body = self.request("PUT", f"/{self.bucket}/{urllib.parse.quote(key)}", body=data)
        if status != 200:
            raise RuntimeError(f"{self.kind}: PUT {key} answered {status}: {body[:300]!r}")
        return self.url(key)

    def delete(self, key):
        self.request("DELETE", f"/{self.bucket}/{urllib.parse.quote(key)}")

    def url(self, key=""):
        return f"s3://{self.bucket}/{key}"

    def env(self, creds=None):
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": self.region, **(creds or self.creds).env()}


def moto_command():
    """The moto_server of this interpreter's environment (python/requirements.lock pins moto), or None."""
    exe = pathlib.Path(sys.executable).parent / "moto_server"
    return str(exe) if exe.is_file() else None


MOTO_ACCOUNT = "123456789012"  # moto's default account

# moto_server, with its signature check computing the canonical query string as AWS does. moto
# rebuilds it from werkzeug's URL, whose query is already percent-decoded ("prefix=a%2F" becomes
# "prefix=a/"), so a request signed as AWS wants it (each value escaped, '/' as %2F) fails there
# with SignatureDoesNotMatch (getmoto/moto#5948, open; the AWS CLI's `s3 ls` fails the same way).
# This launcher escapes the decoded values again before moto's botocore signer sees them: a
# client that signs the raw '/' now fails, as it would on AWS.
MOTO_LAUNCHER = """
import sys, urllib.parse
from moto.iam import access_control
from moto.server import main
create = access_control.IAMRequestBase._create_aws_request
def create_as_aws(self):
    request = create(self)
    url = urllib.parse.urlsplit(request.url)
    query = "&".join(urllib.parse.quote(k, safe="-_.~") + "=" + urllib.parse.quote(v, safe="-_.~")
                     for k, v in urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    request.url = urllib.parse.urlunsplit(url._replace(query=query))
    return request
access_control.IAMRequestBase._create_aws_request = create_as_aws
sys.exit(main(sys.argv[1:]))
"""


def _interpreter(script):
    """The interpreter a Python script's #! line names."""
    with open(script, "rb") as f:
        first = f.readline().decode(errors="replace").strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def _policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


# s3 on the test buckets (wl-test, and wl-no-such-bucket, which must be a 404, not a 403)
S3_ON_TEST_BUCKETS = {"Effect": "Allow", "Action": "s3:*",
                      "Resource": ["arn:aws:s3:::wl-*", "arn:aws:s3:::wl-*/*"]}


class Moto(S3Server):
    """moto_server. With auth=True (the tests' fixture) IAM authentication is on, as on AWS: every
    request's signature is recomputed from the IAM user's secret (botocore's signer inside moto)
    and its policy applied. moto turns it on after INITIAL_NO_AUTH_ACTION_COUNT unauthenticated
    actions (infinite when unset); the harness makes its IAM users, keys and role with
    authentication off, then sets that count to 0 through moto's /moto-api/reset-auth (what
    moto's own set_initial_no_auth_action_count does in server mode). Then:
      .creds    user wl-reader: s3:* on the wl-* buckets (what the tests load with)
      .denied   user wl-denied: valid keys, no policy (AccessDenied)
      .session  temporary credentials (AssumeRole of role wl-role, 15 minutes, with a session token)
    With auth=False (bench/remote_stream.py, which measures speed): no check; S3_ENV works."""

    kind = "moto"

    def __init__(self, workdir, bucket=BUCKET, auth=False):
        super().__init__(workdir, bucket)
        self.exe = moto_command()
        self.auth = auth
        self.creds = Credentials(S3_ENV["AWS_ACCESS_KEY_ID"], S3_ENV["AWS_SECRET_ACCESS_KEY"])
        self.denied = self.session = None

    def _command(self):
        if self.auth:
            return [_interpreter(self.exe), "-c", MOTO_LAUNCHER, "-H", HOST, "-p", str(self.port)]
        return [self.exe, "-H", HOST, "-p", str(self.port)]

    def _environment(self):
        env = dict(os.environ)
        env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)  # authentication off until _provision is done
        return env

    def _ready(self):
        return self.raw("GET", "/moto-api/", timeout=2)[0] == 200  # the dashboard: not an action

    def _call(self, service, version, action, **params):
        """An IAM or STS query action (form POST); the response body. Before authentication is on."""
        body = urllib.parse.urlencode({"Action": action, "Version": version, **params}).encode()
        status, _, data = self.request("POST", "/", body=body, service=service,
                                       headers={"Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise RuntimeError(f"moto: {service} {action} answered {status}: {data[:300]!r}")
        return data.decode()

    def _iam(self, action, **params):
        return self._call("iam", "2010-05-08", action, **params)

    def _user(self, name, *statements):
        self._iam("CreateUser", UserName=name)
        if statements:
            self._iam("PutUserPolicy", UserName=name, PolicyName=f"{name}-policy", PolicyDocument=_policy(*statements))
        xml = self._iam("CreateAccessKey", UserName=name)
        return Credentials(_xml(xml, "AccessKeyId"), _xml(xml, "SecretAccessKey"))

    def _provision(self):
        if not self.auth:
            return
        self.creds = self._user("wl-reader", S3_ON_TEST_BUCKETS)
        self.denied = self._user("wl-denied")
        trust = _policy({"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{MOTO_ACCOUNT}:root"},
                         "Action": "sts:AssumeRole"})
        role = _xml(self._iam("CreateRole", RoleName="wl-role", AssumeRolePolicyDocument=trust), "Arn")
        self._iam("PutRolePolicy", RoleName="wl-role", PolicyName="wl-role-s3", PolicyDocument=_policy(S3_ON_TEST_BUCKETS))
        xml = self._call("sts", "2011-06-15", "AssumeRole", RoleArn=role, RoleSessionName="wl-test",
                         DurationSeconds="900")
        self.session = Credentials(_xml(xml, "AccessKeyId"), _xml(xml, "SecretAccessKey"), _xml(xml, "SessionToken"))
        status, _, body = self.raw("POST", "/moto-api/reset-auth", body=b"0")
        if status != 200:
            raise RuntimeError(f"moto: turning authentication on answered {status}: {body[:300]!r}")


def _xml(text, element):
    m = re.search(f"<{element}>([^<]*)</{element}>", text)
    if m is None:
        raise RuntimeError(f"no <{element}> in {text[:300]!r}")
    return m.group(1)


def s3rver_command():
    """s3rver's script: WL_S3RVER, else where scripts/setup.sh installs it (npm, build-deps/s3rver),
    else on PATH; None when absent or when node is missing."""
    root = pathlib.Path(__file__).resolve().parents[2]
    for candidate in (os.environ.get("WL_S3RVER"), root / "build-deps" / "s3rver" / "node_modules" / ".bin" / "s3rver",
                      shutil.which("s3rver")):
        if candidate and os.access(candidate, os.X_OK) and shutil.which("node"):
            return str(candidate)
    return None


class S3rver(S3Server):
    """s3rver (npm, a Node.js S3 of its own, independent of moto), its data under workdir. Its one
    account is S3RVER / S3RVER (lib/models/account.js): a request signed with another key id is
    InvalidAccessKeyId, a V4 request without x-amz-content-sha256 is 400 InvalidRequest, and one
    more than 15 minutes off its clock RequestTimeTooSkewed. It does not recompute V4 signatures
    (3.7.1's lib/middleware/authentication.js: "Signature version 4 calculation is unimplemented"),
    so a wrong secret passes it: moto checks that. --service-endpoint localhost: virtual-hosted
    requests to http://BUCKET.s3.localhost:PORT/ find the bucket in the host name."""

    kind = "s3rver"

    def __init__(self, workdir, bucket=BUCKET):
        super().__init__(workdir, bucket)
        self.exe = s3rver_command()
        self.creds = Credentials("S3RVER", "S3RVER")

    def _command(self):
        return [self.exe, "-d", str(self.workdir / "data"), "-a", HOST, "-p", str(self.port), "--silent",
                "--service-endpoint", "localhost"]

    def _environment(self):
        # Its ListObjectsV2 continuation tokens are DES-encrypted, which OpenSSL 3 (Node >= 17) only
        # offers from its legacy provider: without it a truncated listing is a 500.
        return {**os.environ, "NODE_OPTIONS": "--openssl-legacy-provider"}

    def _ready(self):
        self.request("GET", "/", timeout=2)  # any answer: it is listening
        return True


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    if moto_command() is None:
        pytest.skip("moto_server is not on PATH (pip install 'moto[server]'): the S3 tests need it")
    server = Moto(tmp_path_factory.mktemp("moto"), auth=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3rver(tmp_path_factory):
    if s3rver_command() is None:
        pytest.skip("s3rver is not installed (scripts/setup.sh installs it with npm into build-deps/s3rver; "
                    "or set WL_S3RVER to its script)")
    server = S3rver(tmp_path_factory.mktemp("s3rver"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def use_s3(server, monkeypatch, creds=None):
    """The environment the library reads set to reach `server` for this test (restored after it);
    AWS_PROFILE and the like removed, and the profile files pointed away from the real ~/.aws."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3",
                 "AWS_S3_ADDRESSING_STYLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    for name, value in server.env(creds).items():
        monkeypatch.setenv(name, value)
    return server


@pytest.fixture
def s3(moto, monkeypatch):
    """The session's moto server (authentication on), with the environment set for this test."""
    return use_s3(moto, monkeypatch)


@pytest.fixture(params=["moto", "s3rver"])
def any_s3(request, monkeypatch):
    """Each S3 server in turn (moto, s3rver), with the environment set for this test."""
    return use_s3(request.getfixturevalue(request.param), monkeypatch)


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
    released: threading.Event | None = None  # hold: set by release()
    timeout: float = 30.0

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
      hold(path, at, timeout)  GETs of `path` send the bytes before offset `at`, then wait for
                               release() (at most `timeout` seconds) before the rest

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

    def hold(self, path, at, timeout=30.0):
        return self._add(_Rule("hold", _norm(path), None, min_offset=at, released=threading.Event(), timeout=timeout))

    def release(self):
        with self._lock:
            for rule in self._rules:
                if rule.kind == "hold":
                    rule.released.set()

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
        # Everything this answer records (bytes sent, the change it sets off) is recorded before the
        # write that completes it: the client may read it and ask again before this thread runs on.
        if status == 206:
            rule = self._count_change(path, start)
            if rule is not None:
                digest = hashlib.sha1(rule.data).hexdigest()[:16]
                with self._lock:
                    self._overrides[path] = (rule.data, f'"changed-{digest}"',
                                             email.utils.formatdate(time.time() + 60, usegmt=True))
                rec.fault = rec.fault or "changed"
        limit = cut[0] if cut else length
        pos = start
        stop = start + limit
        hold = self._take("hold", path)
        while pos < stop:
            n = min(1 << 18, stop - pos)
            if hold is not None and pos <= hold.min_offset < pos + n:
                if pos == hold.min_offset:
                    h.wfile.flush()
                    rec.fault = "held"
                    hold.released.wait(hold.timeout)
                    hold = None
                    continue
                n = hold.min_offset - pos
            chunk = read(pos, pos + n)
            if not chunk:
                break
            rec.sent += len(chunk)
            h.wfile.write(chunk)
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


@pytest.fixture
def fault_http(tmp_path):
    """A fault server of this test's own, serving tmp_path/"fault-root"; stopped after the test."""
    with FaultServer(tmp_path / "fault-root") as server:
        yield server
