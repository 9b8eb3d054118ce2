"""The loaders weightloader is compared with on a GPU machine (scripts/gpu-check.sh), timed in
the same run on the same page-cached checkpoint: safetensors.torch.load_file(path, device=...)
and torch.load(map_location=...) + load_state_dict into a model already on the device.

    python3 scripts/gpu_check_peers.py DIR DEVICE REPS OUT.tsv

Writes one tab-separated line per peer (name, GB/s of file bytes, best seconds, notes), in the
columns wl_bench_cuda prints. A peer that cannot run here gets a line saying why instead."""
import glob
import os
import sys
import time

import torch


def best_seconds(run, reps, device):
    best = float("inf")
    for _ in range(reps):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = run()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
        del out
    return best


def main():
    ckpt, device, reps, out_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    files = sorted(glob.glob(os.path.join(ckpt, "*.safetensors")))
    nbytes = sum(os.path.getsize(f) for f in files)
    lines = []

    def record(name, seconds, notes):
        lines.append(f"{name}\t{nbytes / seconds / 1e9:.2f}\t{seconds:.3f}\t{notes}")

    try:
        from safetensors.torch import load_file, save_file  # noqa: F401
    except ImportError as e:
        lines.append(f"safetensors_load_file\t-\t-\tnot run: {e}")
        load_file = None
    if load_file:
        seconds = best_seconds(lambda: [load_file(f, device=device) for f in files], reps, device)
        record("safetensors_load_file", seconds, f"safetensors.torch.load_file(path, device={device!r})")

    pt = os.path.join(ckpt, "state_dict.pt")
    if load_file:
        state = {}
        for f in files:
            state.update(load_file(f))
        torch.save(state, pt)
        del state
    if os.path.exists(pt):
        try:
            import transformers

            config = transformers.AutoConfig.from_pretrained(ckpt)
            with torch.device(device):
                model = transformers.AutoModelForCausalLM.from_config(config)  # F32, as the checkpoint

            def torch_load():
                model.load_state_dict(torch.load(pt, map_location=device, weights_only=True), strict=False)

            seconds = best_seconds(torch_load, reps, device)
            record("torch_load_state_dict", seconds,
                   f"torch.load(map_location={device!r}) + load_state_dict ({os.path.getsize(pt)} bytes .pt)")
        except Exception as e:  # an image without transformers, or a config it cannot read
            lines.append(f"torch_load_state_dict\t-\t-\tnot run: {type(e).__name__}: {e}")
    else:
        lines.append("torch_load_state_dict\t-\t-\tnot run: no .pt written (safetensors missing)")
    with open(out_path, "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
