"""load_into on modules built without memory (torch's meta device) and with assign=True: the
loader allocates, installs and fills every parameter and persistent buffer; ties stay tied."""
import pytest
import torch

import weightloader as wl
from test_load_into import TinyLlama, checkpoint  # noqa: F401  (the fixture: a torch.save of a TinyLlama)


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 4)
        self.head = torch.nn.Linear(4, 16, bias=False)
        self.head.weight = self.embed.weight  # tied, as lm_head and embed_tokens often are
        self.register_buffer("scale", torch.ones(4))
        self.register_buffer("inv_freq", torch.ones(2), persistent=False)


class Flagged(torch.nn.Parameter):
    """A Parameter subclass (as quantisation libraries define them)."""


def on_meta(cls):
    """cls() with its tensors on the meta device (torch 1.13 has no device context: build, then move)."""
    return cls().to("meta")


def test_a_meta_module_is_allocated_and_filled(checkpoint):
    reference, path = checkpoint
    module = on_meta(TinyLlama)
    assert all(p.is_meta for p in module.parameters())
    assert wl.load_into(module, str(path)) == ([], [])
    assert not any(p.is_meta for p in module.parameters())
    for name, value in reference.state_dict().items():
        assert torch.equal(module.state_dict()[name], value), name
    ids = torch.tensor([1, 5, 7])
    assert torch.equal(module(ids), reference(ids))


def test_ties_buffers_subclasses_and_requires_grad_survive(tmp_path):
    torch.manual_seed(4)
    reference = Tied()
    reference.scale.mul_(3)
    wl.save_file({"embed.weight": reference.embed.weight.detach(), "scale": reference.scale}, str(tmp_path / "m.safetensors"))
    module = Tied().to("meta")  # torch 1.13's .to gives each module a plain Parameter of its own:
    module.embed.weight = Flagged(module.embed.weight, requires_grad=False)  # the subclass, and
    module.head.weight = module.embed.weight  # the tie again, as transformers ties after building
    missing, unexpected = wl.load_into(module, str(tmp_path / "m.safetensors"), strict=False)
    assert missing == ["head.weight"] and unexpected == []  # the tie: one tensor, filled once
    assert module.head.weight is module.embed.weight
    assert type(module.embed.weight) is Flagged and not module.embed.weight.requires_grad
    assert torch.equal(module.embed.weight, reference.embed.weight) and torch.equal(module.scale, reference.scale)
    assert module.inv_freq.is_meta  # non-persistent: no checkpoint fills it, so it is left as it was


def test_assign_replaces_torch_allocated_tensors(checkpoint):
    reference, path = checkpoint
    module = TinyLlama()
    before = module.embed_tokens.weight
    assert wl.load_into(module, str(path), assign=True) == ([], [])
    assert module.embed_tokens.weight is not before and module.embed_tokens.weight.requires_grad
    assert torch.equal(module.embed_tokens.weight, reference.embed_tokens.weight)


def test_a_meta_module_in_another_dtype(checkpoint):
    reference, path = checkpoint
    module = on_meta(TinyLlama)
    wl.load_into(module, str(path), dtype=torch.bfloat16)
    assert module.norm.dtype == torch.bfloat16
    assert torch.equal(module.norm, reference.norm.to(torch.bfloat16))


def save_tied_reference(path):
    torch.manual_seed(5)
    reference = Tied()
    wl.save_file({"embed.weight": reference.embed.weight.detach(), "scale": reference.scale * 2}, str(path))
    return reference


def test_zero_copy_installs_private_views_of_the_file_in_a_meta_module(tmp_path):
    path = tmp_path / "m.safetensors"
    reference = save_tied_reference(path)
    module = Tied().to("meta")
    module.head.weight = module.embed.weight
    result = wl.load_into(module, str(path), strict=False, zero_copy=True)
    assert sorted(result.report["zero_copy"]) == ["embed.weight", "scale"]
    assert result.report["bytes_read"] == 0  # nothing read: the parameters are the file's bytes
    assert module.head.weight is module.embed.weight and module.embed.weight.requires_grad
    assert torch.equal(module.embed.weight, reference.embed.weight) and torch.equal(module.scale, reference.scale * 2)
    with torch.no_grad():
        module.embed.weight.fill_(7)  # writable; a private mapping: the file keeps its bytes
    assert torch.equal(wl.load_file(str(path))["embed.weight"], reference.embed.weight.detach())


def test_zero_copy_fills_a_module_that_has_memory_in_place(tmp_path):
    # Its tensors are the caller's: they are filled, never left as they were (zero_copy applies
    # where tensors may be replaced: a meta-device module, assign=True).
    path = tmp_path / "m.safetensors"
    reference = save_tied_reference(path)
    module = Tied()
    before = module.embed.weight
    result = wl.load_into(module, str(path), strict=False, zero_copy=True)
    assert result.report["zero_copy"] == [] and module.embed.weight is before
    assert torch.equal(module.embed.weight, reference.embed.weight) and torch.equal(module.scale, reference.scale * 2)
    direct = Tied()
    loader = wl.WeightLoaderRegistry.get("local")(zero_copy=True)
    loader.load_weights(direct, loader.get_weights(str(path)), strict=False)
    assert torch.equal(direct.embed.weight, reference.embed.weight)


def test_zero_copy_reads_what_needs_conversion_and_copies_tensors_held_in_memory(tmp_path):
    path = tmp_path / "m.safetensors"
    reference = save_tied_reference(path)
    module = Tied().to("meta").to(torch.bfloat16)
    result = wl.load_into(module, str(path), strict=False, zero_copy=True)
    assert result.report["zero_copy"] == [] and module.embed.weight.dtype == torch.bfloat16
    assert torch.equal(module.embed.weight, reference.embed.weight.to(torch.bfloat16))
    # A dict of tensors is no file: whatever the library backs by it is copied into the module's memory.
    held = Tied()
    loader = wl.WeightLoaderRegistry.get("local")(zero_copy=True)
    loader.load_weights(held, {"embed.weight": reference.embed.weight.detach(), "scale": reference.scale * 2},
                        strict=False, assign=True)
    assert torch.equal(held.embed.weight, reference.embed.weight) and torch.equal(held.scale, reference.scale * 2)
