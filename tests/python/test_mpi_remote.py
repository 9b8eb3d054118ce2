"""MPI ranks streaming their slices from HTTP and S3: `mpirun -np 2 weightloader generate --model URL`
prints run.c's text; every rank ranges over its own rows and columns only, in few requests (a
strided slice is one request where a request costs more than its gaps), and only rank 0 asks for
the file's head. Skipped without mpirun."""
import collections
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from remote_servers import Nginx, running_nginx

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI") or ROOT / "build" / "weightloader")
MPIRUN = ROOT / "tests" / "mpi" / "mpirun.sh"
RANKS = 4


def mpirun_generate(url, tokenizer, env=None, ranks=2, proxies=None):
    """`proxies`: a port per rank, each rank's requests sent through it (http_proxy), so that the
    server's log tells the ranks apart."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found (apt install openmpi-bin)")
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI)")
    wrap = []
    if proxies:
        ports = " ".join(map(str, proxies))
        wrap = ["sh", "-c", f'set -- {ports} "$@"; shift $OMPI_COMM_WORLD_RANK; P=$1; shift $(({len(proxies)} - '
                            f'$OMPI_COMM_WORLD_RANK)); http_proxy=http://127.0.0.1:$P exec "$@"', "sh"]
    cmd = [str(MPIRUN), "-np", str(ranks), "--mca", "btl", "self,vader", *wrap, str(CLI), "generate", "--model", url,
           "--tokenizer", str(tokenizer), "-t", "0", "-n", "200"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def nginx_ranks(tmp_path_factory):
    """nginx with a port per rank besides its own (Nginx.extra_ports)."""
    yield from running_nginx(Nginx(tmp_path_factory.mktemp("nginx-ranks"), extra_ports=RANKS))


def test_two_ranks_stream_their_slices_over_http(nginx, stories):
    url = nginx.put("mpi/stories260K.bin", stories.read_bytes())
    before = len(nginx.log())
    # Requests priced at nothing (WL_HTTP_LATENCY_MS=0): no gap is worth reading, each rank asks
    # for its own bytes only.
    r = mpirun_generate(url, stories.parent / "tok512.bin", env=dict(os.environ, WL_HTTP_LATENCY_MS="0"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
    assert "rank 0: read 509.2 KiB" in r.stderr and "rank 1: read 509.2 KiB" in r.stderr, r.stderr
    sent = sum(e.sent for e in nginx.log()[before:] if e.path == "mpi/stories260K.bin" and e.method == "GET")
    # Rank 0 reads the 28-byte header (and sniffs the format); the weights go once, but for the norms.
    assert sent <= 1.05 * stories.stat().st_size, sent


def test_four_ranks_make_the_header_requests_of_one(nginx, stories):
    """Rank 0 reads the headers and sends the catalogue as a value, with the file's size and ETag;
    the other ranks open the file from it (no HEAD) and range over their own bytes only: no rank but
    rank 0 asks for the file's head, or for the file at all before reading its slice."""
    url = nginx.put("mpi/stories-heads.bin", stories.read_bytes())
    heads = {}
    for ranks in (1, 4):
        before = len(nginx.log())
        r = mpirun_generate(url, stories.parent / "tok512.bin", ranks=ranks)
        assert r.returncode == 0, r.stderr
        assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
        on_file = [e for e in nginx.log()[before:] if e.path == "mpi/stories-heads.bin"]
        heads[ranks] = [e.range for e in on_file if e.method == "GET" and e.range.startswith("bytes=0-")]
        assert sum(e.method == "HEAD" for e in on_file) == 1, [(e.method, e.range) for e in on_file]
        assert all(e.if_match for e in on_file if e.method == "GET"), on_file  # pinned to the ETag
    assert len(heads[1]) == 1 and heads[4] == heads[1], heads


def test_four_ranks_fetch_each_tensor_in_at_most_one_request(nginx_ranks, stories):
    """Each rank's slice of stories260K (q/k/v/w1/w3 rows, wo/w2 columns: runs of 64 and 172 bytes
    with gaps between them) comes in at most one ranged GET per tensor, not one per row (668 per
    rank before): a request costs more than reading the gaps between its runs. Rank 0 sends the
    file's one HEAD and its header GET; the other ranks no HEAD at all. The text is the
    single-process one."""
    url = nginx_ranks.put("mpi/stories-ranks.bin", stories.read_bytes())
    tensors = json.loads(subprocess.run([str(CLI), "inspect", str(stories), "--json"], capture_output=True, text=True,
                                        check=True).stdout)["total_tensors"]
    r = mpirun_generate(url, stories.parent / "tok512.bin", ranks=RANKS, proxies=nginx_ranks.extra_ports)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
    by_rank = collections.defaultdict(list)
    for e in nginx_ranks.log():
        assert e.port in nginx_ranks.extra_ports, e  # every request came through a rank's port
        by_rank[nginx_ranks.extra_ports.index(e.port)].append(e)
    size = stories.stat().st_size
    for rank in range(RANKS):
        on_file = [e for e in by_rank[rank] if e.path == "mpi/stories-ranks.bin"]
        gets = [e for e in on_file if e.method == "GET"]
        heads = [e for e in by_rank[rank] if e.method == "HEAD"]
        header = [e for e in gets if e.range.startswith("bytes=0-")]  # the file's head (the data starts at 28)
        summary = f"rank {rank}: {[(e.method, e.path, e.range) for e in by_rank[rank]]}"
        assert len(header) == (rank == 0), summary
        assert len(gets) <= tensors + (rank == 0), summary
        assert all(e.status == 206 and e.if_match for e in gets), summary
        assert len([e for e in heads if e.path == "mpi/stories-ranks.bin"]) == (rank == 0), summary
        if rank > 0:
            assert not heads, summary
        assert sum(e.sent for e in gets if e not in header) <= size, summary  # no byte asked for twice


def test_two_ranks_stream_their_slices_from_s3(s3, stories):
    s3.put("mpi/stories260K.bin", stories.read_bytes())
    r = mpirun_generate(s3.url("mpi/stories260K.bin"), stories.parent / "tok512.bin", env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
    assert "rank 1: read 509.2 KiB" in r.stderr, r.stderr
