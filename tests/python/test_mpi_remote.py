"""MPI ranks streaming their slices from HTTP and S3: `mpirun -np 2 weightloader generate --model URL`
prints run.c's text, and the server sends each byte of the checkpoint's tensors about once
(every rank ranges over its own rows and columns only). Skipped without mpirun."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI") or ROOT / "build" / "weightloader")
MPIRUN = ROOT / "tests" / "mpi" / "mpirun.sh"


def mpirun_generate(url, tokenizer, env=None, ranks=2):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found (apt install openmpi-bin)")
    if not CLI.is_file():
        pytest.skip(f"no CLI at {CLI} (set WL_CLI)")
    cmd = [str(MPIRUN), "-np", str(ranks), "--mca", "btl", "self,vader", str(CLI), "generate", "--model", url,
           "--tokenizer", str(tokenizer), "-t", "0", "-n", "200"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_two_ranks_stream_their_slices_over_http(nginx, stories):
    url = nginx.put("mpi/stories260K.bin", stories.read_bytes())
    before = len(nginx.log())
    r = mpirun_generate(url, stories.parent / "tok512.bin")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
    assert "rank 0: read 509.2 KiB" in r.stderr and "rank 1: read 509.2 KiB" in r.stderr, r.stderr
    sent = sum(e.sent for e in nginx.log()[before:] if e.path == "mpi/stories260K.bin" and e.method == "GET")
    # Both ranks read the 28-byte header (and sniff the format); the weights go once, but for the norms.
    assert sent <= 1.05 * stories.stat().st_size, sent


def test_four_ranks_make_the_header_requests_of_one(nginx, stories):
    """Rank 0 reads the headers and sends the catalogue as a value; the other ranks open the file
    (a HEAD each) and range over their own bytes only: no rank but rank 0 asks for the file's head."""
    url = nginx.put("mpi/stories-heads.bin", stories.read_bytes())
    heads = {}
    for ranks in (1, 4):
        before = len(nginx.log())
        r = mpirun_generate(url, stories.parent / "tok512.bin", ranks=ranks)
        assert r.returncode == 0, r.stderr
        assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
        on_file = [e for e in nginx.log()[before:] if e.path == "mpi/stories-heads.bin"]
        heads[ranks] = [e.range for e in on_file if e.method == "GET" and e.range.startswith("bytes=0-")]
        assert sum(e.method == "HEAD" for e in on_file) == ranks, [(e.method, e.range) for e in on_file]
    assert len(heads[1]) == 1 and heads[4] == heads[1], heads


def test_two_ranks_stream_their_slices_from_s3(s3, stories):
    s3.put("mpi/stories260K.bin", stories.read_bytes())
    r = mpirun_generate(s3.url("mpi/stories260K.bin"), stories.parent / "tok512.bin", env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout == (stories.parent / "expected_greedy_t0_n200.txt").read_text()
    assert "rank 1: read 509.2 KiB" in r.stderr, r.stderr
