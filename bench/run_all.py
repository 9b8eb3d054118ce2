"""weightloader's benchmark suite: one run, side by side, on the same files and the same machine.

Generates a Llama-shaped checkpoint (`weightloader synth`, F32) as safetensors (one file, and 4
shards), PyTorch .bin (Debian's torch) and GGUF (F32, and Q8_0 for dequantisation), then measures:
  limits      dd iflag=direct (cold, O_DIRECT), page-cache read into one reused buffer, parallel
              pread into a pre-touched buffer, memcpy, and pread into fresh memory (4k pages, huge
              pages, huge pages pre-faulted in parallel): bench/limits.cpp
  ours        weightloader load, warm and cold, F32 -> F32 and F32 -> BF16, each io mode, with and
              without prefault, a reload into already-faulted parameters, zero-copy, every format,
              tp=2 (two ranks at once, each reading its slices)
  before      with --baseline-build DIR: every "ours" figure also with an earlier build's binaries,
              each run alternating between the two, and a table of after / before per figure
  python      the Python module's load_into(module, path) into an nn.Module of the checkpoint's
              shapes (F32, and a BF16 module from the F32 file), allocated by torch and built on the
              meta device (the loader allocates): bench/python_load_into.py
  python-tp   with --python-tp: load_into on 1, 2 and 4 gloo ranks (loopback), each rank's module
              holding its slices, against every rank torch.loading the whole .bin and slicing:
              bench/python_tp_ranks.py
  tools       weightloader diff (the checkpoint against a copy of it) and verify, as ratios to a
              plain warm load of the same files; `load --verify sha256` (the file hashed from the
              bytes the load reads, against a SHA256SUMS beside it) cold and warm, alternating with
              plain loads, as ratios to them
  remote      bench/remote_stream.py: `weightloader load URL` at concurrency 1, 4, 16 against curl
              (one whole-object curl; 4 and 16 ranged curls at once) on loopback nginx and s3rver S3,
              the synthetic `small` preset's safetensors file; skipped, saying why, without nginx
              or s3rver (or with --no-remote)
  peers       torch.load + load_state_dict into an nn.Module (+ .to(torch.bfloat16)), a naive
              dict-then-copy loader (the seed's style), ggml's own GGUF reader (--ggml-gguf-bin)
Cold means the checkpoint's files were evicted from the page cache first: fsync, then
posix_fadvise(POSIX_FADV_DONTNEED) over each whole file (the auto mode's reason then shows how much
was still cached). Warm means every file was read and then found in the page cache by the test
io=auto uses (`weightloader inspect --residency`: cachestat, else mincore), re-read until it is;
the "resident" column gives the share found before the row's runs (min..max over them). Each
figure is the median of --runs runs, with min..max. Prints the table and the ratios (ours / limit,
ours / peer) and writes bench/RESULTS.md.

Usage: build-deps/venv/bin/python bench/run_all.py [--preset 2gb] [--layers N] [--runs 3] [--dir /tmp/wl-bench]
                                         [--build build] [--ggml-gguf-bin PATH] [--results FILE]
                                         [--baseline-build DIR] [--generate-only] [--python-tp]
                                         [--quick] [--no-remote] [--io-ways DIR]
--verify-as-read DIR: only the load --verify sha256 rows, on the safetensors folder DIR.
--before-after DIR (with --baseline-build): only warm and cold loads of the safetensors folder DIR,
F32 and F32 -> BF16, each run alternating between the baseline build's CLI and this build's; prints
after / before per row (a refactor's "no slower").
--io-ways DIR: only the limits and io=auto against every explicit way (io mode x prefault), warm and
cold, F32 and BF16, on the safetensors folder DIR; prints that table.
--quick: the tiny preset, one run, written to DIR/RESULTS-quick.md: checks that the suite works
(its figures measure process start-up, not loading).
--ggml-gguf-bin: a program that takes a .gguf path, loads every tensor with ggml's
gguf_init_from_file(no_alloc=false) and prints {"seconds": S} (timing the load only).
"""
import argparse
import glob
import json
import mmap
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

import remote_stream

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET_GB = {"tiny": 0.001, "small": 0.23, "1gb": 1.1, "2gb": 2.5}
PRESET_LAYERS = {"tiny": 2, "small": 4, "1gb": 16, "2gb": 18}


def run(cmd, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


def run_json(cmd, **kw):
    out = run(cmd, **kw).strip()
    return json.loads(out[out.index("{"):])  # one JSON object, possibly after a line of text


def files_of(path):
    if os.path.isfile(path):
        return [path]
    return sorted(f for f in glob.glob(os.path.join(path, "*")) if os.path.isfile(f))


def evict(path):
    """Drops the checkpoint's files from the page cache: fsync, then POSIX_FADV_DONTNEED."""
    for f in files_of(path):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_through(path):
    for f in files_of(path):
        with open(f, "rb") as fh:
            while fh.read(16 << 20):
                pass


def stat(values):
    return (statistics.median(values), min(values), max(values))


def size_of(path):
    return sum(os.path.getsize(f) for f in files_of(path))


def read_safetensors_f32(path):
    """The F32 tensors of a safetensors file as numpy arrays (copies; the mapping is closed)."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = int.from_bytes(m[:8], "little")
    header = json.loads(m[8:8 + n])
    base = 8 + n
    state = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32"
        begin, end = info["data_offsets"]
        state[name] = np.frombuffer(m, dtype=np.float32, count=(end - begin) // 4, offset=base + begin).reshape(info["shape"]).copy()
    m.close()
    return state


def make_pytorch_bin(src_dir, out_dir):
    """pytorch_model.bin written by Debian's torch from the safetensors file (read with numpy)."""
    import torch

    state = {k: torch.from_numpy(v) for k, v in read_safetensors_f32(os.path.join(src_dir, "model.safetensors")).items()}
    os.makedirs(out_dir, exist_ok=True)
    torch.save(state, os.path.join(out_dir, "pytorch_model.bin"))
    shutil.copy(os.path.join(src_dir, "config.json"), out_dir)


def machine():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    fs = run(["stat", "-f", "-c", "%T", "/tmp"]).strip()
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}, file system {fs}, THP `{thp}`"


class Suite:
    def __init__(self, args):
        self.a = args
        self.use_build(args.build)
        self.limits = os.path.join(args.build, "bench", "wl_limits")
        self.rows = []  # (group, label, stat GB/s, extra dict)
        self.before = None  # the baseline build's figures for the next "ours" row
        self.resident = []  # page-cache share of the files before each run since the last add()

    def residency(self, path):
        """The share of the checkpoint's files in the page cache, by the test io=auto uses. Always
        the current build's CLI: a baseline build may predate `inspect --residency`."""
        report = run_json([os.path.join(self.a.build, "weightloader"), "inspect", path, "--residency", "--json"])
        files = report["files"]
        size = sum(f["size"] for f in files)
        resident = sum(f["resident_bytes"] or 0 for f in files)
        return resident / size if size else 1.0, size - resident, len(files)

    def warm(self, path, tries=3):
        """Reads the files until the page cache holds them (all but a page per file); records the share."""
        for _ in range(tries):
            read_through(path)
            share, missing, files = self.residency(path)
            if missing <= 4096 * files:
                break
        self.resident.append(share)
        return share

    def evict(self, path):
        evict(path)
        self.resident.append(self.residency(path)[0])

    def use_build(self, build):
        """The weightloader binaries the "ours" group measures."""
        self.wl = os.path.join(build, "weightloader")
        self.loads = os.path.join(build, "bench", "wl_bench_loads")

    def sample(self, one_run, value=lambda r: r):
        """one_run() --runs times; with --baseline-build, each time also with the baseline's
        binaries, alternately (so drift in the machine's load hits both alike). Returns this
        build's results; the baseline's values become the "before" row of the next add()."""
        ours, before = [], []
        builds = ([(self.a.baseline_build, before)] if self.a.baseline_build else []) + [(self.a.build, ours)]
        for _ in range(self.a.runs):
            for build, out in builds:
                self.use_build(build)
                out.append(one_run())
        self.use_build(self.a.build)
        self.before = [value(r) for r in before] if before else None
        return ours

    def add(self, group, label, gbps, **extra):
        if self.resident:
            lo, hi = min(self.resident), max(self.resident)
            extra.setdefault("resident", f"{lo:.0%}" if hi - lo < 0.005 else f"{lo:.0%}..{hi:.0%}")
        self.resident = []
        if group == "ours" and self.before:
            self.rows.append(("before", label, stat(self.before), {}))
        self.before = None
        self.rows.append((group, label, stat(gbps), extra))
        med, lo, hi = stat(gbps)
        print(f"  {group:6} {label:58} {med:6.2f} GB/s ({lo:.2f}..{hi:.2f}) {extra.get('resident', '')} "
              f"{extra.get('note', '')}", file=sys.stderr)

    def generate(self):
        a = self.a
        os.makedirs(a.dir, exist_ok=True)
        need = PRESET_GB[a.preset] * (a.layers or PRESET_LAYERS[a.preset]) / PRESET_LAYERS[a.preset] * 5.5
        free = shutil.disk_usage(a.dir).free / 1e9
        tag = f"{a.preset}-{a.layers or PRESET_LAYERS[a.preset]}"
        self.st = os.path.join(a.dir, f"st-{tag}")
        self.sharded = os.path.join(a.dir, f"sharded-{tag}")
        self.bin = os.path.join(a.dir, f"bin-{tag}")
        self.gguf = os.path.join(a.dir, f"f32-{tag}.gguf")
        self.q8 = os.path.join(a.dir, f"q8_0-{tag}.gguf")
        missing = [p for p in (self.st, self.sharded, self.bin, self.gguf, self.q8) if not os.path.exists(p)]
        if missing and free < need:
            sys.exit(f"not enough free disk in {a.dir}: {free:.1f} GB free, about {need:.1f} GB needed")
        layers = ["--layers", str(a.layers)] if a.layers else []
        if not os.path.exists(self.st):
            print(f"generating {self.st}", file=sys.stderr)
            run([self.wl, "synth", self.st, "--preset", a.preset, "--dtype", "f32"] + layers)
        if not os.path.exists(self.sharded):
            print(f"generating {self.sharded}", file=sys.stderr)
            run([self.wl, "synth", self.sharded, "--preset", a.preset, "--dtype", "f32", "--shards", "4"] + layers)
        if not os.path.exists(self.bin):
            print(f"generating {self.bin}", file=sys.stderr)
            run([sys.executable, os.path.abspath(__file__), "--make-bin", self.st, self.bin])
        if not os.path.exists(self.gguf):
            print(f"generating {self.gguf}", file=sys.stderr)
            run([self.wl, "convert", self.st, self.gguf, "--to", "gguf", "--gguf-type", "f32"])
        if not os.path.exists(self.q8):
            print(f"generating {self.q8}", file=sys.stderr)
            run([self.wl, "convert", self.st, self.q8, "--to", "gguf", "--gguf-type", "q8_0"])
        self.st_file = os.path.join(self.st, "model.safetensors")
        self.bytes = os.path.getsize(self.st_file)

    def wl_load(self, path, dtype, io="auto", cold=False, extra=()):
        """GB/s of each run of `weightloader load`, the last report, and every report."""
        def one_run():
            self.evict(path) if cold else self.warm(path)
            return run_json([self.wl, "load", path, "--dtype", dtype, "--io", io, "--json", "--quiet"] + list(extra))
        reports = self.sample(one_run, lambda r: r["gbps"])
        return [r["gbps"] for r in reports], reports[-1], reports

    def limits_group(self):
        a = self.a
        dd = []
        for _ in range(a.runs):
            self.evict(self.st_file)
            t0 = time.perf_counter()
            run(["dd", f"if={self.st_file}", "of=/dev/null", "bs=16M", "iflag=direct"])
            dd.append(self.bytes / (time.perf_counter() - t0) / 1e9)
        self.add("limit", "cold read, O_DIRECT (dd iflag=direct bs=16M)", dd)
        self.dd = stat(dd)[0]
        share = self.warm(self.st_file)
        self.resident = []
        lim = run_json([self.limits, self.st_file, "2", str(a.runs)])
        names = {
            "reused_buffer": "page-cache read into one reused 4 MiB buffer, 1 thread",
            "pread_page_cache": "parallel pread into a pre-touched buffer, 2 threads",
            "memcpy": "memcpy, 1 thread, pre-touched buffers",
            "fresh_4k": "parallel pread into fresh memory, 4k pages",
            "fresh_thp": "parallel pread into fresh memory, huge pages",
            "fresh_prefault": "parallel pread into fresh memory, huge pages pre-faulted",
        }
        for key, label in names.items():
            s = lim[key]
            self.rows.append(("limit", label, (s["gbps"], s["min"], s["max"]), {"resident": f"{share:.0%}"}))
            print(f"  limit  {label:58} {s['gbps']:6.2f} GB/s ({s['min']:.2f}..{s['max']:.2f})", file=sys.stderr)
        self.pread_limit = lim["pread_page_cache"]["gbps"]
        self.fresh_limit = lim["fresh_thp"]["gbps"]

    def rss_note(self, r):
        """Peak RSS against parameters + staging bound + baseline."""
        bound = r["parameter_bytes"] + r["staging_bound"] + r["rss_before_load_bytes"]
        ok = r["peak_rss_bytes"] <= bound
        return dict(rss=r["peak_rss_bytes"], bound=bound, rss_ok=ok,
                    note=f"RSS {r['peak_rss_bytes'] / 1e9:.2f} GB {'<=' if ok else '>'} {bound / 1e9:.2f} GB")

    def take_probes(self):
        """io=auto's probes (core/io_probe), taken once per device before anything is timed, as a
        machine that has loaded before has them; their figures go in the results."""
        self.evict(self.st)
        run([self.wl, "load", self.st, "--json", "--quiet"])
        self.warm(self.st)
        run([self.wl, "load", self.st, "--json", "--quiet"])
        self.resident = []
        path = os.environ.get("WL_IO_PROFILE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "weightloader", "io-profile.json")
        self.profile = open(path).read() if os.path.exists(path) else "(none: WL_IO_PROFILE=off or not writable)"

    def ours_group(self):
        self.ours = {}
        self.take_probes()
        self.io_ways()
        for dtype in ("f32", "bf16"):
            re = self.sample(lambda: run_json([self.loads, "reload", self.st, dtype, "auto"])["gbps"])
            self.add("ours", f"warm {dtype} reload into faulted-in parameters", re)
            self.ours[("reload", dtype)] = stat(re)[0]
        def zero_copy_run():
            self.warm(self.st)
            return run_json([self.wl, "load", self.st, "--kw", "zero_copy=true", "--json", "--quiet"])["seconds"]
        secs = self.sample(zero_copy_run, lambda s: self.bytes / s / 1e9)
        self.add("ours", "warm f32 zero_copy=true (mapped, not read)", [self.bytes / s / 1e9 for s in secs],
                 note=f"{statistics.median(secs) * 1000:.1f} ms")
        self.zero_copy_s = statistics.median(secs)
        for label, path in (("safetensors, 4 shards", self.sharded), ("PyTorch .bin", self.bin),
                            ("GGUF F32", self.gguf), ("GGUF Q8_0 (dequantised)", self.q8)):
            for dtype in ("f32", "bf16"):
                g, r, _ = self.wl_load(path, dtype)
                self.add("ours", f"warm {dtype} {label} ({r['io_mode']})", g, **self.rss_note(r))
                self.ours[("format", label, dtype)] = stat(g)[0]
        # tp=2: both ranks at once, each reading only its slices.
        def tp_run():
            self.warm(self.st)
            procs = [subprocess.Popen([self.loads, "tp", str(k), "2", self.st, "auto"], stdout=subprocess.PIPE, text=True)
                     for k in range(2)]
            outs = [json.loads(p.communicate()[0]) for p in procs]
            read = sum(o["bytes_read"] for o in outs)
            return read / max(o["seconds"] for o in outs) / 1e9, read / outs[0]["model_bytes"]
        runs = self.sample(tp_run, lambda r: r[0])
        gbps, ratio = [r[0] for r in runs], runs[-1][1]
        self.tp_ratio = ratio
        self.add("ours", "warm f32 tp=2, two ranks at once", gbps, note=f"bytes read / model bytes = {ratio:.3f}")
        self.ours["tp2"] = stat(gbps)[0]

    def io_ways(self):
        """io=auto beside each explicit way (io mode x prefault), warm and cold, F32 and BF16: auto
        against the best of them, every way taking its turn in each round (so drift in the machine
        hits them alike; prefault matters to pread and mmap, direct and uring fault in the background)."""
        ways = [("auto", None), ("pread", "true"), ("pread", "false"), ("mmap", "true"), ("mmap", "false"), ("direct", None),
                ("uring", None)]
        self.auto_vs_best = []
        for dtype in ("f32", "bf16"):
            for state in ("warm", "cold"):
                got = {way: [] for way in ways}
                for i in range(self.a.runs):
                    for io, prefault in ways[i % len(ways):] + ways[:i % len(ways)]:
                        self.evict(self.st) if state == "cold" else self.warm(self.st)
                        extra = ["--kw", f"prefault={prefault}"] if prefault else []
                        r = run_json([self.wl, "load", self.st, "--dtype", dtype, "--io", io, "--json", "--quiet"] + extra)
                        got[(io, prefault)].append(r)
                best = (0, "")
                for (io, prefault), reports in got.items():
                    g = [r["gbps"] for r in reports]
                    way = f"io={io}" + (f" prefault={prefault}" if prefault else "")
                    label = f"{state} {dtype} {way}" + (f" ({reports[-1]['io_mode']})" if io == "auto" else "")
                    self.resident = []
                    self.add("ours", label, g, **self.rss_note(reports[-1]),
                             reason=reports[-1].get("io_mode_reason", "") if io == "auto" else "")
                    self.ours[(state, dtype, io) if io == "auto" else (state, dtype, io, prefault)] = stat(g)[0]
                    if io != "auto":
                        best = max(best, (stat(g)[0], way))
                auto_reports = got[("auto", None)]
                self.auto_vs_best.append((f"{state} {dtype}", auto_reports[-1]["io_mode_reason"] or auto_reports[-1]["io_mode"],
                                          self.ours[(state, dtype, "auto")], best))

    def auto_table(self):
        lines = ["", "io=auto's choice on each row, against the best explicit way measured in the same run "
                 "(its probes, remembered per device in the profile file, were taken before the timed runs):", "",
                 "| row | auto chose | auto GB/s | best explicit way | best GB/s | auto / best |",
                 "| --- | --- | --- | --- | --- | --- |"]
        for label, chosen, auto, (best, way) in self.auto_vs_best:
            lines.append(f"| {label} | {chosen} | {auto:.2f} | {way} | {best:.2f} | {auto / best:.2f} |")
        return lines + ["", "The probe profile:", "", "```json", self.profile.strip(), "```"]

    def peers_group(self):
        self.peers = {}
        shapes = os.path.join(self.a.dir, "bin-shapes.json")
        with open(shapes, "w") as f:
            f.write(run([self.wl, "inspect", self.bin, "--json"]))
        binfile = os.path.join(self.bin, "pytorch_model.bin")
        for dtype in ("f32", "bf16"):
            g, rss = [], 0
            for _ in range(self.a.runs):
                self.warm(self.bin)
                r = run_json([sys.executable, os.path.join(ROOT, "bench", "torch_peer.py"), binfile, shapes, dtype])
                g.append(self.bytes / r["seconds"] / 1e9)
                rss = r["peak_rss_bytes"]
            suffix = " + .to(torch.bfloat16)" if dtype == "bf16" else ""
            self.add("peer", f"torch.load + load_state_dict{suffix}", g, note=f"RSS {rss / 1e9:.2f} GB")
            self.peers[("torch", dtype)] = stat(g)[0]
            g = []
            for _ in range(self.a.runs):
                self.warm(self.st)
                r = run_json([self.loads, "naive", self.st, dtype])
                g.append(self.bytes / r["seconds"] / 1e9)
                rss = r["peak_rss_bytes"]
            self.add("peer", f"naive dict-then-copy {dtype} (seed's style)", g, note=f"RSS {rss / 1e9:.2f} GB")
            self.peers[("naive", dtype)] = stat(g)[0]
        if self.a.ggml_gguf_bin:
            g = []
            size = os.path.getsize(self.gguf)
            for _ in range(self.a.runs):
                self.warm(self.gguf)
                g.append(size / run_json([self.a.ggml_gguf_bin, self.gguf])["seconds"] / 1e9)
            self.add("peer", "ggml gguf_init_from_file (GGUF F32, no_alloc=false)", g)
            self.peers["ggml"] = stat(g)[0]
        # The Python loaders users would pick instead, each beside weightloader's equivalent, one fresh
        # process per run, the two alternating (bench/python_peers.py: its ROWS, its fair rule).
        import python_peers
        tag = os.path.basename(self.st)[len("st-"):]
        layers = ["--layers", str(self.a.layers)] if self.a.layers else []
        st_bf16 = os.path.join(self.a.dir, f"st-bf16-{tag}")
        if not os.path.exists(st_bf16):
            run([self.wl, "synth", st_bf16, "--preset", self.a.preset, "--dtype", "bf16"] + layers)
        f16 = os.path.join(self.a.dir, f"f16-{tag}.gguf")
        if not os.path.exists(f16):
            run([self.wl, "convert", self.st, f16, "--to", "gguf", "--gguf-type", "f16", "--no-tokenizer", "-q"])
        files = python_peers.derived_files(
            {"st-f32": self.st_file, "st-bf16": os.path.join(st_bf16, "model.safetensors"), "bin-f32": binfile,
             "q8_0": self.q8, "f16": f16}, lambda p: python_peers.shapes_of(p, self.wl))
        # random blocks of each other GGML block type, written by gguf-py (python_peers.BLOCK_TYPES)
        files.update(python_peers.files_in(self.a.dir, self.wl, set(python_peers.BLOCK_TYPES)))
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        # Each row also as a share of what the machine allows: warm rows of the parallel pread into
        # fresh memory (the limits group's fresh_thp), cold rows of the O_DIRECT read.
        limits = {"warm": self.fresh_limit, "cold": self.dd}
        for (case, key, state, peer_label, ours_label), peer, ours in python_peers.run_rows(
                files, self.a.runs, self.warm, self.evict, self.wl, self.a.dir, env):
            size = size_of(files["st-f32" if key == "s3-f32" else key])
            pg = [size / r["seconds"] / 1e9 for r in peer]
            og = [size / r["seconds"] / 1e9 for r in ours]
            prss = max(r["peak_rss_bytes"] for r in peer)
            orss = max(r["peak_rss_bytes"] for r in ours)
            pm, om, olo, ohi = stat(pg)[0], *stat(og)
            share = ("" if key == "s3-f32" else
                     f"; of the {state} limit: peer {pm / limits[state]:.0%}, ours {om / limits[state]:.0%}")
            self.add("peer", f"{state} {peer_label} ({python_peers.FILE_DTYPE[key]})", pg,
                     note=f"RSS {prss / 1e9:.2f} GB; {ours_label}: {om:.2f} GB/s ({olo:.2f}..{ohi:.2f}), "
                          f"RSS {orss / 1e9:.2f} GB; ours / peer {om / pm:.2f}x{share}")
            self.peers[("python", case, key, state)] = (pm, om)
        # Downloads: `weightloader download` against huggingface_hub.snapshot_download from the tests'
        # fake hub and nginx CDN, into a fresh cache each run (bench/hub_download.py).
        import hub_download
        mib = 16 if self.a.quick else 512
        for c, got in hub_download.measure(self.wl, mib, [8], self.a.runs):
            ours = stat([(mib << 20) / s / 1e9 for s in got["ours"]])[0]
            hf = [(mib << 20) / s / 1e9 for s in got["snapshot_download"]]
            self.add("peer", f"huggingface_hub.snapshot_download, {mib} MiB repo, fresh cache", hf,
                     note=f"weightloader download --concurrency {c}: {ours:.2f} GB/s; ours / peer {ours / stat(hf)[0]:.2f}x")
            self.peers[("python", "download", f"{mib} MiB", "fresh cache")] = (stat(hf)[0], ours)

    def python_group(self):
        """load_into from Python, on the same module torch_peer.py fills."""
        self.python = {}
        shapes = os.path.join(self.a.dir, "st-shapes.json")
        with open(shapes, "w") as f:
            f.write(run([self.wl, "inspect", self.st, "--json"]))
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        for dtype in ("f32", "bf16"):
            g, meta, cli, last = [], [], [], {}
            script = [sys.executable, os.path.join(ROOT, "bench", "python_load_into.py"), self.st, shapes, dtype]

            def cli_load():
                cli.append(run_json([self.wl, "load", self.st, "--dtype", dtype, "--json", "--quiet"])["gbps"])

            def python_load(memory, out):
                last[memory] = run_json(script + [memory], env=env)
                out.append(self.bytes / last[memory]["seconds"] / 1e9)

            order = [cli_load, lambda: python_load("torch", g), lambda: python_load("meta", meta)]
            # Each run beside a C++ CLI load, so that all meet the same machine, the order rotating from
            # run to run: what a process pays for fresh memory depends on what the one before it left
            # (on this VM a load right after a Python process exits can take 5x as long).
            for i in range(self.a.runs):
                for step in order[i % 3:] + order[:i % 3]:
                    self.warm(self.st)
                    step()
            r, m = last["torch"], last["meta"]
            label = "load_into(module, path) F32" if dtype == "f32" else "load_into(BF16 module, F32 file)"
            self.add("python", f"C++ CLI load {dtype}, runs interleaved with the next rows'", cli)
            self.add("python", label, g, **self.rss_note(r))
            self.add("python", label.replace("module", "meta-device module") + ": the loader allocates", meta,
                     **self.rss_note(m))
            self.python[dtype] = stat(g)[0]
            self.python[("meta", dtype)] = stat(meta)[0]
            self.python[("cli", dtype)] = stat(cli)[0]

    def python_tp_group(self):
        """Tensor-parallel load_into on 1, 2, 4 ranks against torch.load-everything-then-slice."""
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        out = run([sys.executable, os.path.join(ROOT, "bench", "python_tp_ranks.py"), self.st,
                   os.path.join(self.bin, "pytorch_model.bin"), "--runs", str(self.a.runs)], env=env)
        for row in json.loads(out.strip().splitlines()[-1])["rows"]:
            n, growth, bound = row["ranks"], row["ours_rss_growth"], row["ours_bound"]
            ok = growth <= bound
            self.add("python-tp", f"load_into tp={n}, each rank reads its slices (slowest rank)",
                     [self.bytes / row["ours_seconds"] / 1e9], rss=growth, bound=bound, rss_ok=ok,
                     note=f"{row['ours_bytes_read'] / 1e6:.0f} MB read per rank; RSS +{growth / 1e6:.0f} MB "
                          f"{'<=' if ok else '>'} slice + staging {bound / 1e6:.0f} MB")
            self.add("python-tp", f"torch.load whole .bin + slice, tp={n} (slowest rank)",
                     [self.bytes / row["peer_seconds"] / 1e9],
                     note=f"{row['peer_bytes_read'] / 1e6:.0f} MB read per rank; RSS +{row['peer_rss_growth'] / 1e6:.0f} MB; "
                          f"ours is {row['peer_seconds'] / row['ours_seconds']:.1f}x faster")
    def tools_group(self):
        """diff (the checkpoint against a copy of it) and verify, beside plain warm loads of the same files."""
        self.tools = {}
        copy = self.st + "-copy"
        if not os.path.exists(copy):
            shutil.copytree(self.st, copy)
        both = [self.st, copy]
        size = size_of(self.st) + size_of(copy)
        load, diff, verify = [], [], []
        resident = {"load": [], "diff": [], "verify": []}  # each row's own warm-ups
        for _ in range(self.a.runs):  # interleaved, so that each meets the same machine
            for p in both:
                resident["load"].append(self.warm(p))
            load.append(size / sum(run_json([self.wl, "load", p, "--json", "--quiet"])["seconds"] for p in both) / 1e9)
            for p in both:
                resident["diff"].append(self.warm(p))
            r = run_json([self.wl, "diff", self.st, copy, "--json", "--quiet"])
            assert r["matches"], "a checkpoint differs from its copy"
            diff.append(size / r["summary"]["seconds"] / 1e9)
            resident["verify"].append(self.warm(self.st))
            r = run_json([self.wl, "verify", self.st, "--json", "--quiet"])
            verify.append(size_of(self.st) / r["seconds"] / 1e9)
        self.resident = resident["load"]
        self.add("tools", "warm f32 load of the checkpoint and of its copy (for the next rows)", load)
        self.resident = resident["diff"]
        self.add("tools", "diff: the checkpoint against its copy (bytes of both / time)", diff,
                 note=f"{stat(diff)[0] / stat(load)[0]:.2f}x the loads")
        self.resident = resident["verify"]
        self.add("tools", "verify: NaN/Inf/zero scan of the checkpoint", verify,
                 note=f"{stat(verify)[0] / stat(load)[0]:.2f}x the load")
        self.tools = {"load": stat(load)[0], "diff": stat(diff)[0], "verify": stat(verify)[0]}

    def before_after_group(self):
        """Warm and cold `weightloader load` of the safetensors folder, F32 and F32 -> BF16, each run
        alternating between --baseline-build's CLI and this build's (sample()): a markdown table."""
        lines = [f"| load | before: `{self.a.baseline_build}` GB/s | after: `{self.a.build}` GB/s | after / before |",
                 "| --- | --- | --- | --- |"]
        for cold in (False, True):
            for dtype in ("f32", "bf16"):
                after = self.wl_load(self.st, dtype, cold=cold)[0]
                before, self.before = self.before, None
                (b, b_lo, b_hi), (m, lo, hi) = stat(before), stat(after)
                label = f"{'cold' if cold else 'warm'} F32 -> {dtype.upper()}"
                lines.append(f"| {label} | {b:.2f} ({b_lo:.2f}..{b_hi:.2f}) | {m:.2f} ({lo:.2f}..{hi:.2f}) | {m / b:.2f} |")
                print("  " + lines[-1], file=sys.stderr)
        print("\n".join(lines))

    def verify_as_read_group(self):
        """`load --verify sha256` against a plain load of the same file, cold and warm, runs alternating."""
        import hashlib
        sums = os.path.join(self.st, "SHA256SUMS")
        if not os.path.exists(sums):  # the reference digest, from hashlib
            h = hashlib.sha256()
            with open(self.st_file, "rb") as f:
                for block in iter(lambda: f.read(1 << 24), b""):
                    h.update(block)
            with open(sums, "w") as f:
                f.write(f"{h.hexdigest()}  {os.path.basename(self.st_file)}\n")
        self.verify_ratios = {}
        for cold in (True, False):
            plain, verified, resident = [], [], {"plain": [], "verified": []}
            for _ in range(self.a.runs):
                for extra, out, key in (([], plain, "plain"), (["--verify", "sha256"], verified, "verified")):
                    (self.evict if cold else self.warm)(self.st_file)
                    resident[key] += self.resident
                    self.resident = []
                    out.append(run_json([self.wl, "load", self.st_file, "--json", "--quiet"] + extra)["gbps"])
            how = "cold" if cold else "warm"
            self.resident = resident["plain"]
            self.add("tools", f"{how} f32 load, safetensors (for the next row)", plain)
            self.resident = resident["verified"]
            ratio = stat(verified)[0] / stat(plain)[0]
            self.verify_ratios[how] = ratio
            self.add("tools", f"{how} f32 load --verify sha256 (hashed as read)", verified, note=f"{ratio:.2f}x the load")

    def remote_group(self):
        why = "--no-remote" if self.a.no_remote else remote_stream.missing_servers()
        if why:
            print(f"remote: skipped ({why})", file=sys.stderr)
            return
        # s3rver (Node.js) answers at a fraction of nginx's speed: a small object keeps the group short.
        small = remote_stream.synth(self.wl, self.a.dir, "small")
        for target, label, values, note in remote_stream.measure(small, self.a.build, self.a.runs,
                                                                 self.a.baseline_build, self.a.dir):
            self.add("remote", f"{target}, {os.path.getsize(small) / 1e9:.2f} GB: {label}", values, note=note)

    def report(self, seconds):
        a = self.a
        o, p = self.ours, self.peers
        targets = [
            ("cold >= 0.9x O_DIRECT read limit (F32, io=auto)", o[("cold", "f32", "auto")] / self.dd, 0.9),
            ("warm F32 >= 0.7x parallel-pread limit", o[("warm", "f32", "auto")] / self.pread_limit, 0.7),
            ("warm F32 reload (parameters already faulted in) >= 0.7x parallel-pread limit",
             o[("reload", "f32")] / self.pread_limit, 0.7),
            ("(not a target) warm F32 / pread into fresh memory with huge pages", o[("warm", "f32", "auto")] / self.fresh_limit, 0.7),
            ("warm F32 >= 5x torch.load + load_state_dict", o[("warm", "f32", "auto")] / p[("torch", "f32")], 5.0),
            ("warm F32->BF16 >= 10x torch.load + .to(bfloat16)", o[("warm", "bf16", "auto")] / p[("torch", "bf16")], 10.0),
            ("tp=2: bytes read by both ranks <= 1.05x the model", self.tp_ratio, 1.05),
            *((f"io=auto {label} >= 0.95x the best explicit way ({way}: {best:.2f} GB/s)", auto / best, 0.95)
              for label, _, auto, (best, way) in self.auto_vs_best),
            ("Python load_into F32 >= 0.9x the C++ load (CLI, same file, interleaved runs)",
             self.python["f32"] / self.python[("cli", "f32")], 0.9),
            ("Python load_into F32->BF16 >= 0.9x the C++ load (interleaved runs)",
             self.python["bf16"] / self.python[("cli", "bf16")], 0.9),
            ("Python load_into F32 >= 8x torch.load + load_state_dict", self.python["f32"] / p[("torch", "f32")], 8.0),
            ("Python load_into, meta-device module, F32 >= 0.9x the C++ load (interleaved runs)",
             self.python[("meta", "f32")] / self.python[("cli", "f32")], 0.9),
            ("Python load_into, meta-device module, F32 >= 8x torch.load + load_state_dict",
             self.python[("meta", "f32")] / p[("torch", "f32")], 8.0),
            ("diff (checkpoint vs its copy) >= 0.8x a plain warm load of both", self.tools["diff"] / self.tools["load"], 0.8),
            ("verify >= 0.8x a plain warm load of the same file", self.tools["verify"] / self.tools["load"], 0.8),
            ("cold load --verify sha256 >= 0.9x a cold load without (interleaved runs)", self.verify_ratios["cold"], 0.9),
        ]
        rss_rows = [(label, extra) for g, label, _, extra in self.rows if "rss_ok" in extra]
        lines = [
            "# Benchmark results",
            "",
            f"Machine: {machine()}.",
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Suite time {seconds:.0f} s. "
            f"Load average before / after: {self.load_before} / {os.getloadavg()[0]:.2f} "
            "(the machine's 2 cores are shared with other builds: absolute figures are noisy, ratios are measured side by side).",
            f"Checkpoint: synthetic Llama preset `{a.preset}`{f', {a.layers} layers' if a.layers else ''}, "
            f"{self.bytes / 1e9:.2f} GB of F32 (`weightloader synth`), as one safetensors file, 4 shards, "
            "PyTorch .bin (Debian's torch 1.13), GGUF F32 and GGUF Q8_0.",
            f"Command: `build-deps/venv/bin/python bench/run_all.py --preset {a.preset}{f' --layers {a.layers}' if a.layers else ''} "
            f"--runs {a.runs}{' --ggml-gguf-bin ...' if a.ggml_gguf_bin else ''}`; median of {a.runs} runs (min..max). "
            "GB/s are checkpoint (file) bytes per second of load time. Cold: files evicted with fsync + "
            "posix_fadvise(POSIX_FADV_DONTNEED) before each run.",
            "",
            "| group | what | GB/s (min..max) | / O_DIRECT limit | / pread limit | resident | notes |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for group, label, (med, lo, hi), extra in self.rows:
            lines.append(f"| {group} | {label} | {med:.2f} ({lo:.2f}..{hi:.2f}) | {med / self.dd:.2f} | "
                         f"{med / self.pread_limit:.2f} | {extra.get('resident', '')} | "
                         f"{extra.get('note', '')} {extra.get('reason', '')} |")
        lines += self.auto_table()
        lines += ["", "Ratios against peers (same checkpoint, warm):", "",
                  "| ours | peer | ratio |", "| --- | --- | --- |"]
        pairs = [(("warm", "f32", "auto"), ("torch", "f32"), "weightloader F32 vs torch.load + load_state_dict"),
                 (("warm", "bf16", "auto"), ("torch", "bf16"), "weightloader F32->BF16 vs torch.load + .to(bfloat16)"),
                 (("warm", "f32", "auto"), ("naive", "f32"), "weightloader F32 vs naive dict-then-copy"),
                 (("warm", "bf16", "auto"), ("naive", "bf16"), "weightloader F32->BF16 vs naive dict-then-copy")]
        if "ggml" in p:
            pairs.append((("format", "GGUF F32", "f32"), "ggml", "weightloader GGUF F32 vs ggml gguf_init_from_file"))
        for ok, pk, label in pairs:
            lines.append(f"| {label} | | {o[ok] / p[pk]:.1f}x |")
        for key, (pm, om) in p.items():  # the Python peers: each row's two sides measured alternately
            if key[0] == "python":
                _, case, file_key, state = key
                lines.append(f"| weightloader ({case}, {file_key}, {state}) | python_peers {case} | {om / pm:.2f}x |")
        before = {label: (med, lo, hi) for g, label, (med, lo, hi), _ in self.rows if g == "before"}
        if before:
            lines += ["", f"Before / after (baseline build `{a.baseline_build}`, each run alternating with the current "
                      "build's in this suite; a ratio inside both spreads is no change):", "",
                      "| what | before GB/s (min..max) | after GB/s (min..max) | after / before |", "| --- | --- | --- | --- |"]
            for g, label, (med, lo, hi), _ in self.rows:
                if g == "ours" and label in before:
                    b = before[label]
                    lines.append(f"| {label} | {b[0]:.2f} ({b[1]:.2f}..{b[2]:.2f}) | {med:.2f} ({lo:.2f}..{hi:.2f}) | "
                                 f"{med / b[0]:.2f} |")
        lines += ["", "Targets:", "", "| target | measured | met |", "| --- | --- | --- |"]
        for label, value, goal in targets:
            met = value <= goal if label.startswith("tp=2") else value >= goal
            verdict = "" if label.startswith("(not") else ("yes" if met else "NO")
            lines.append(f"| {label} | {value:.2f} | {verdict} |")
        bad = [label for label, extra in rss_rows if not extra["rss_ok"]]
        lines.append(f"| peak RSS <= parameters + staging bound + baseline, every load above | "
                     f"{len(rss_rows) - len(bad)} of {len(rss_rows)} | {'yes' if not bad else 'NO: ' + ', '.join(bad)} |")
        text = "\n".join(lines) + "\n"
        print(text)
        with open(a.results, "w") as f:
            f.write(text)

    def main(self):
        self.load_before = f"{os.getloadavg()[0]:.2f}"
        t0 = time.perf_counter()
        if self.a.io_ways:  # that group alone, on the given safetensors folder
            self.ours = {}
            self.st, self.st_file = self.a.io_ways, os.path.join(self.a.io_ways, "model.safetensors")
            self.bytes = os.path.getsize(self.st_file)
            self.limits_group()
            self.take_probes()
            self.io_ways()
            print("\n".join(self.auto_table()))
            return
        if self.a.before_after:  # that group alone, on the given safetensors folder
            if not self.a.baseline_build:
                sys.exit("--before-after needs --baseline-build")
            self.st = self.a.before_after
            self.before_after_group()
            return
        if self.a.verify_as_read:  # that group alone, on the given safetensors folder
            self.st, self.st_file = self.a.verify_as_read, os.path.join(self.a.verify_as_read, "model.safetensors")
            self.verify_as_read_group()
            return
        self.generate()
        if self.a.generate_only:
            return
        print("limits", file=sys.stderr)
        self.limits_group()
        print("weightloader" + (f" (interleaved with the baseline build {self.a.baseline_build})"
                                if self.a.baseline_build else ""), file=sys.stderr)
        self.ours_group()
        print("python", file=sys.stderr)
        self.python_group()
        print("peers", file=sys.stderr)
        self.peers_group()
        if self.a.python_tp:
            print("python-tp", file=sys.stderr)
            self.python_tp_group()
        print("tools", file=sys.stderr)
        self.tools_group()
        self.verify_as_read_group()
        print("remote", file=sys.stderr)
        self.remote_group()
        self.report(time.perf_counter() - t0)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--make-bin":
        make_pytorch_bin(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="2gb", choices=sorted(PRESET_GB))
    ap.add_argument("--layers", type=int, default=0, help="override the preset's layer count (scales the size)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/wl-bench")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ggml-gguf-bin", default="")
    ap.add_argument("--baseline-build", default="", help="an earlier build to measure the same loads with, for before/after")
    ap.add_argument("--generate-only", action="store_true", help="write the checkpoints and stop")
    ap.add_argument("--python-tp", action="store_true", help="also run the tensor-parallel Python group (1, 2, 4 ranks)")
    ap.add_argument("--results", default="", help="where the table goes (default: bench/RESULTS.md)")
    ap.add_argument("--no-remote", action="store_true", help="skip the remote group (nginx, s3rver)")
    ap.add_argument("--quick", action="store_true", help="tiny preset, one run: checks the suite, measures nothing")
    ap.add_argument("--io-ways", default="", metavar="DIR",
                    help="only the limits and io=auto beside every explicit io mode and prefault, on the safetensors folder DIR")
    ap.add_argument("--before-after", default="", metavar="DIR",
                    help="only warm and cold loads of the safetensors folder DIR, alternating with --baseline-build")
    ap.add_argument("--verify-as-read", default="", metavar="DIR",
                    help="only load --verify sha256 against plain loads, cold and warm, on the safetensors folder DIR")
    args = ap.parse_args()
    if args.quick:
        args.preset, args.runs, args.dir = "tiny", 1, args.dir + "-quick"
    args.results = args.results or (os.path.join(args.dir, "RESULTS-quick.md") if args.quick
                                    else os.path.join(ROOT, "bench", "RESULTS.md"))
    Suite(args).main()


if __name__ == "__main__":
    main()
