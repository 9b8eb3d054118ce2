"""weightloader.plan and `weightloader plan`: what a load will read and hold, per rank, before it
reads — against what the load then reads (its report), what the safetensors library says the files
hold, and the RSS a load process really grows by; max_host_memory refused before a byte is read."""
import json
import os
import subprocess

import pytest
import torch
from safetensors import safe_open as st_safe_open
from safetensors.torch import save_file

import weightloader as wl

CLI = os.environ.get("WL_CLI", "build/weightloader")
TINY_LLAMA = os.path.join(os.environ.get("WL_TESTDATA_DIR", ""), "hf-tiny-random-llama-2")


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    """Two safetensors files written by the safetensors library: 2 × 24 MiB of F32 and a BF16 tensor."""
    d = tmp_path_factory.mktemp("plan")
    g = torch.Generator().manual_seed(0)
    save_file({"a.weight": torch.randn(2048, 3072, generator=g), "a.bias": torch.randn(2048, generator=g)},
              str(d / "part-1.safetensors"))
    save_file({"b.weight": torch.randn(3072, 2048, generator=g), "c.weight": torch.randn(64, 64).bfloat16()},
              str(d / "part-2.safetensors"))
    return d


def tensor_bytes(path):
    """A file's tensor bytes as the safetensors library reads its header."""
    with st_safe_open(str(path), "pt") as f:
        return sum(f.get_tensor(k).numel() * f.get_tensor(k).element_size() for k in f.keys())


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_plan_reads_what_the_files_hold_and_what_the_load_then_reads(two_files):
    plan = wl.plan(two_files)
    [rank] = plan.ranks
    files = {os.path.basename(f): n for f, n in rank.files.items()}
    assert files == {p.name: tensor_bytes(p) for p in two_files.glob("*.safetensors")}
    assert rank.bytes_read == sum(files.values())
    assert rank.bytes_read == cli_json("load", str(two_files), "-q")["bytes_read"]
    assert json.loads(plan.to_json()) == cli_json("plan", str(two_files))
    assert "peak host" in str(plan) and "part-2.safetensors" in str(plan)


@pytest.mark.skipif(not os.path.isdir(TINY_LLAMA), reason="shared test data not found")
def test_each_ranks_plan_reads_what_that_rank_of_the_engine_reads():
    plan = wl.plan(TINY_LLAMA, tensor_parallel_size=2)
    reports = wl.LLM(TINY_LLAMA, tensor_parallel_size=2).load_reports()
    assert [r.bytes_read for r in plan.ranks] == [r.bytes_read for r in reports]
    assert 0 < plan.ranks[0].bytes_read < tensor_bytes(os.path.join(TINY_LLAMA, "model.safetensors"))


@pytest.mark.parametrize("threads", [1, 4])
def test_the_planned_peak_bounds_the_rss_a_load_grows_by(two_files, threads):
    planned = cli_json("plan", str(two_files), "--kw", f"concurrency={threads}")["ranks"][0]["peak_host"]
    load = cli_json("load", str(two_files), "-q", "--kw", f"concurrency={threads}")
    grown = load["peak_rss_bytes"] - load["rss_before_load_bytes"]
    assert load["bytes_read"] <= grown <= planned, (grown, planned)


def test_a_budget_below_the_least_is_refused_before_anything_is_read(two_files):
    least = wl.plan(two_files).ranks[0].min_host
    with pytest.raises(wl.InvalidArgumentError, match=rf"max_host_memory={least - 1} is below.*nothing was read.*OverBudget"):
        wl.plan(two_files, max_host_memory=least - 1)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3072, 2048)
            self.b = torch.nn.Linear(2048, 3072, bias=False)
            self.c = torch.nn.Linear(64, 64, bias=False, dtype=torch.bfloat16)
    m = Model()
    for p in m.parameters():
        torch.nn.init.zeros_(p)
    loader = wl.CoreWeightLoader("local", max_host_memory=least - 1)
    with pytest.raises(wl.InvalidArgumentError, match="OverBudget"):
        loader.load_weights(m, loader.get_weights(two_files), progress=False)
    assert all(torch.count_nonzero(p) == 0 for p in m.parameters())  # nothing half-loaded
    out = subprocess.run([CLI, "load", str(two_files), "-q", "--kw", f"max_host_memory={least - 1}"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "OverBudget" in out.stderr
    loader = wl.CoreWeightLoader("local", max_host_memory=least)  # the least itself fits
    assert loader.load_weights(m, loader.get_weights(two_files), progress=False).bytes_read == wl.plan(two_files).ranks[0].bytes_read


def test_the_planned_peak_bounds_the_rss_of_a_load_over_http(two_files, tmp_path):
    """Remote reads land in the parameters, but each reader holds a receive buffer (and each object a
    cached head): the plan counts them."""
    from remote_servers import FaultServer
    with FaultServer(tmp_path / "www") as server:
        url = server.put("part-1.safetensors", two_files / "part-1.safetensors")
        local = cli_json("plan", str(two_files / "part-1.safetensors"))["ranks"][0]
        remote = cli_json("plan", url)["ranks"][0]
        load = cli_json("load", url, "-q")
    assert remote["bytes_read"] == local["bytes_read"] == load["bytes_read"]
    assert remote["peak_host"] >= local["peak_host"] + 512 * 1024  # a receive buffer per reader at least
    grown = load["peak_rss_bytes"] - load["rss_before_load_bytes"]
    assert load["bytes_read"] <= grown <= remote["peak_host"], (grown, remote["peak_host"])
