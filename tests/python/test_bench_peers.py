"""bench/python_peers.py compares like with like: for every row, the peer and weightloader's side
produce the same tensors (count, bytes and the checksum of their touched pages), on a tiny synthetic
checkpoint made by the CLI, tensorizer's serialization and the S3 copy included."""
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
sys.path.insert(0, str(ROOT / "bench"))


@pytest.fixture(scope="module")
def peers():
    if not CLI.is_file():
        pytest.skip(f"the CLI is not built at {CLI}")
    for module in ("tensorizer", "fastsafetensors", "runai_model_streamer", "transformers", "gguf"):
        pytest.importorskip(module)
    import python_peers
    return python_peers


@pytest.fixture(scope="module")
def files(peers, tmp_path_factory):
    return peers.files_in(str(tmp_path_factory.mktemp("peers")), str(CLI), preset="tiny")


def test_every_row_loads_the_same_tensors_on_both_sides(peers, files, tmp_path):
    import weightloader
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(weightloader.__path__[0]),
                                                        os.environ.get("PYTHONPATH", "")]))
    seen = set()
    from run_all import evict
    # each (case, file) once, warm; of the GGML block types only Q4_K (test_peer_gguf_types checks them all)
    rows = [row for row in {row[:2]: row for row in reversed(peers.ROWS)}.values()
            if row[1] not in peers.BLOCK_TYPES or row[1] == "q4_k"]
    for (case, key, state, *_), peer, ours in peers.run_rows(files, 1, lambda p: None, evict, str(CLI),
                                                              str(tmp_path), env, rows=rows):
        (p,), (o,) = peer, ours
        assert (p["tensors"], p["bytes"]) == (o["tensors"], o["bytes"]), (case, key, state, p, o)
        assert p["touch_checksum"] == o["touch_checksum"], (case, key, state)
        assert p["tensors"] > 0
        seen.add((case, key))
    wanted = {(case, key) for case, key, *_ in rows}
    if not peers.s3_available():
        wanted = {w for w in wanted if w[1] != "s3-f32"}
    assert seen == wanted


def test_a_failing_side_names_the_command(peers, tmp_path):
    with pytest.raises(RuntimeError, match="python_peers.py load_file"):
        peers.pair("load_file", str(tmp_path / "missing.safetensors"), None, 1, lambda p: None)
