"""F8_E8M0 (torch's float8_e8m0fnu, the microscaling scale type) read from and converted into as torch
does: every one of its 256 codes decoded to F32, BF16 and F16, and F32 values (halfway cases,
subnormals, overflow, NaN and infinities, negatives) encoded, each compared with torch's own."""
import numpy as np
import torch
from safetensors.torch import save_file

import weightloader as wl


class One(torch.nn.Module):
    def __init__(self, n, dtype):
        super().__init__()
        self.t = torch.nn.Parameter(torch.zeros(n, dtype=dtype), requires_grad=False)


def test_every_code_decodes_as_torch_decodes_it(tmp_path):
    codes = torch.arange(256, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    save_file({"t": codes}, str(tmp_path / "e8m0.safetensors"))  # the safetensors library writes F8_E8M0
    assert wl.safe_open(tmp_path / "e8m0.safetensors", "pt").get_tensor("t").dtype == torch.float8_e8m0fnu
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        m = One(256, dtype)
        wl.load_into(m, tmp_path / "e8m0.safetensors")
        expected = codes.to(dtype)
        same = (m.t == expected) | (torch.isnan(m.t) & torch.isnan(expected))
        assert bool(same.all()), (dtype, m.t[~same], expected[~same])


def test_f32_values_encode_as_torch_encodes_them(tmp_path):
    bits = np.array([0x00400000, 0x00400001, 0x00500000, 0x007FFFFF, 0x00000001, 0x00800000, 0x00C00000, 0x80C00000,
                     0x3FC00000, 0x3FBFFFFF, 0x7F400000, 0x7F3FFFFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
                     0x00000000, 0x80000000], dtype=np.uint32)
    values = torch.cat([torch.from_numpy(bits.view(np.float32)), torch.randn(4096) * 1e3, torch.randn(4096) * 1e-30])
    save_file({"t": values}, str(tmp_path / "f32.safetensors"))
    m = One(len(values), torch.float8_e8m0fnu)
    wl.load_into(m, tmp_path / "f32.safetensors")
    assert torch.equal(m.t.view(torch.uint8), values.to(torch.float8_e8m0fnu).view(torch.uint8))
