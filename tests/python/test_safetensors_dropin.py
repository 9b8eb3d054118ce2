"""weightloader.safetensors as the safetensors package: bytes the format defines, the shared
safetensors vectors, torch and NumPy round trips, save_model/load_model with tied weights, the
reference's slicing rules and errors, and the same API over GGUF, PyTorch and llama2.c files."""
import io
import os
import struct
import sys

import numpy as np
import pytest
import torch

import weightloader.safetensors as st
import weightloader.safetensors.numpy as stn
import weightloader.safetensors.torch as stt
from test_safe_open import GGML_F16, GGML_F32, write_gguf

VECTORS = "safetensors-vectors"


def header_bytes(text):
    """A header as the format specifies it: the JSON padded with spaces to a multiple of 8, after its length."""
    text = text.encode() + b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


# --- serialize: bytes the format defines ---

def test_serialize_matches_hand_computed_bytes():
    data = np.zeros((2, 2), dtype=np.int32)
    data[1, 1] = 1
    expected = header_bytes('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}') + data.tobytes()
    assert expected[:8] == b"@\0\0\0\0\0\0\0"  # 61 bytes of JSON padded to 64
    assert stn.save({"test": data}) == expected
    spec = st.TensorSpec(dtype="int32", shape=[2, 2], data_ptr=data.ctypes.data, data_len=16)
    assert spec.dtype == "I32" and spec.shape == [2, 2] and st.serialize({"test": spec}) == expected


def test_serialize_orders_by_dtype_then_name_and_puts_metadata_first(tmp_path):
    a, b, c = np.ones(2, np.float16), np.arange(3, dtype=np.int64), np.zeros((), np.uint8)
    expected = header_bytes('{"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},'
                            '"a":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},'
                            '"c":{"dtype":"U8","shape":[],"data_offsets":[28,29]}}') + b.tobytes() + a.tobytes() + b"\0"
    assert stn.save({"c": c, "a": a, "b": b}, metadata={"k": "v"}) == expected
    stn.save_file({"a": a, "b": b, "c": c}, tmp_path / "x.safetensors", metadata={"k": "v"})
    assert (tmp_path / "x.safetensors").read_bytes() == expected
    assert os.listdir(tmp_path) == ["x.safetensors"]  # the temporary file was renamed


def test_complex64_is_stored_as_c64_pairs_and_read_back(tmp_path):
    c = torch.zeros((2, 2), dtype=torch.complex64)
    c[1, 1] = complex(-1, 1)
    expected = header_bytes('{"test":{"dtype":"C64","shape":[2,2],"data_offsets":[0,32]}}') + \
        b"\0" * 24 + struct.pack("<ff", -1, 1)
    assert stt.save({"test": c}) == expected
    assert torch.equal(stt.load(expected)["test"], c)
    stt.save_file({"test": c, "x": torch.arange(3.0)}, tmp_path / "c.safetensors")
    with st.safe_open(tmp_path / "c.safetensors", "pt") as f:
        assert f.get_slice("test").get_dtype() == "C64" and f.get_slice("test").get_shape() == [2, 2]
        assert torch.equal(f.get_tensor("test"), c) and torch.equal(f.get_slice("test")[1:], c[1:])
        assert torch.equal(f.get_tensor("x"), torch.arange(3.0))
    with st.safe_open(tmp_path / "c.safetensors", "np", backend="pread") as f:
        assert np.array_equal(f.get_slice("test")[1, 1:], c.numpy()[1, 1:])


def test_c64_tensors_are_views_of_the_private_mapping_and_keep_the_metadata(tmp_path):
    c = torch.tensor([complex(1, -1), complex(2, 0.5)], dtype=torch.complex64)
    path = tmp_path / "c.safetensors"
    stt.save_file({"c": c, "x": torch.arange(3.0)}, path, metadata={"k": "v"})
    before = path.read_bytes()
    with st.safe_open(path, "pt") as f:
        assert f.metadata() == {"k": "v"}
        a, b = f.get_tensor("c"), f.get_tensor("c")
        assert a.data_ptr() == b.data_ptr()  # one mapping per reader, the C64 bytes viewed as they are
        a[0] = 0
        assert torch.equal(b, a)
    assert path.read_bytes() == before
    # C64 beside F4, which the library decodes: both served
    (tmp_path / "f4.safetensors").write_bytes(
        header_bytes('{"c":{"dtype":"C64","shape":[1],"data_offsets":[0,8]},'
                     '"f":{"dtype":"F4","shape":[2],"data_offsets":[8,9]}}') + b"\0" * 8 + b"\x71")
    with st.safe_open(tmp_path / "f4.safetensors", "pt") as f:
        assert f.get_tensor("c").dtype == torch.complex64
        assert f.get_tensor("f").dtype == torch.float4_e2m1fn_x2 and f.get_tensor("f").view(torch.uint8).tolist() == [0x71]
    with st.safe_open(tmp_path / "f4.safetensors", "np") as f:
        assert f.get_tensor("f").tolist() == [0.5, 6.0]  # NumPy has no F4: decoded, the low nibble first
    # C64 beside a dtype the library lacks: the library's refusal stands
    (tmp_path / "fnuz.safetensors").write_bytes(
        header_bytes('{"c":{"dtype":"C64","shape":[1],"data_offsets":[0,8]},'
                     '"f":{"dtype":"F8_E4M3FNUZ","shape":[1],"data_offsets":[8,9]}}') + b"\0" * 9)
    with pytest.raises(st.SafetensorError, match="not support"):
        st.safe_open(tmp_path / "fnuz.safetensors", "pt")


def test_tensor_spec_checks_and_refusals():
    with pytest.raises(st.SafetensorError, match="Unknown dtype"):
        st.TensorSpec(dtype="complex128", shape=[1], data_ptr=0, data_len=16)
    assert st.TensorSpec(dtype="float4_e2m1fn_x2", shape=[2, 3], data_ptr=0, data_len=6).shape == [2, 6]
    with pytest.raises(TypeError):
        st.serialize({"t": {"dtype": "float32", "shape": [1], "data_ptr": 0, "data_len": 0}})
    with pytest.raises(st.SafetensorError, match="3 bytes given for F32"):
        st.serialize({"t": st.TensorSpec(dtype="float32", shape=[1], data_ptr=0, data_len=3)})


# --- the shared vectors (built from the reference's own test cases) ---

def vector_rows(testdata):
    rows = (testdata / VECTORS / "EXPECTED.tsv").read_text().splitlines()[1:]
    return [row.split("\t") for row in rows]


def test_shared_vectors_accepted_and_rejected_as_expected(testdata):
    for name, _, expected, _ in vector_rows(testdata):
        path = testdata / VECTORS / name
        if expected.startswith("OK"):
            with st.safe_open(path, framework="np") as f:
                tensors = f.get_tensors()
            assert list(tensors) == [n for n, _ in st.deserialize(path.read_bytes())], name
            continue
        with pytest.raises(st.SafetensorError, match="Error while deserializing header: "):
            st.safe_open(path, framework="np")
        with pytest.raises(st.SafetensorError, match="Error while deserializing"):
            st.deserialize(path.read_bytes())


def test_shared_vectors_values_and_bytes(testdata):
    d = testdata / VECTORS
    with st.safe_open(d / "ok_metadata_i32.safetensors", framework="numpy") as f:
        assert f.metadata() == {"framework": "pt"} and f.keys() == ["test1"]
    with st.safe_open(d / "ok_i32_2x2_zeros.safetensors", framework="np") as f:
        assert f.metadata() is None
    assert np.array_equal(stn.load_file(d / "ok_i32_one_at_1_1.safetensors")["test"], [[0, 0], [0, 1]])
    assert stn.load_file(d / "ok_zero_sized_tensor.safetensors")["test"].shape == (2, 0)
    assert stt.load_file(d / "ok_empty_with_metadata.safetensors") == {}
    f32 = np.arange(6, dtype=np.float32)
    # what the reference's serializer wrote, byte for byte
    assert stn.save({"attn.0": f32.reshape(1, 2, 3)}) == (d / "ok_serialize_f32_1x2x3.safetensors").read_bytes()
    assert stn.save({"attn0": f32.reshape(1, 1, 2, 3)}) == \
        (d / "ok_serialize_f32_aligned_padded.safetensors").read_bytes()
    assert stn.save({"test": np.array([[0, 0], [0, 1]], np.int32)}) == \
        (d / "ok_i32_one_at_1_1.safetensors").read_bytes()
    assert stn.save({"test1": np.zeros((2, 2), np.int32), "test2": np.zeros((2, 2), np.float16)}) == \
        (d / "ok_two_tensors_i32_f16.safetensors").read_bytes()


# --- torch ---

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 3)
        self.b = self.a


def test_save_model_drops_tied_names_into_metadata_and_load_model_restores_them(tmp_path):
    model = Tied()
    with pytest.raises(RuntimeError, match="share memory"):
        stt.save_file(model.state_dict(), tmp_path / "x.safetensors")
    stt.save_model(model, tmp_path / "m.safetensors")
    with st.safe_open(tmp_path / "m.safetensors", "pt") as f:
        assert f.keys() == ["a.bias", "a.weight"]
        assert f.metadata() == {"b.bias": "a.bias", "b.weight": "a.weight"}
    other = Tied()
    missing, unexpected = stt.load_model(other, tmp_path / "m.safetensors")
    assert not missing and not unexpected and torch.equal(other.b.weight, model.a.weight)
    assert stt._remove_duplicate_names(model.state_dict()) == {"a.bias": ["b.bias"], "a.weight": ["b.weight"]}


def test_saving_refuses_non_contiguous_sparse_and_overlapping_tensors(tmp_path):
    a = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        stt.save({"t": a.t()})
    with pytest.raises(ValueError, match="sparse tensors: `\\['s'\\]`"):
        stt.save({"s": torch.sparse_coo_tensor(size=(2, 3))})
    with pytest.raises(RuntimeError, match="share memory"):
        stt.save({"a": a, "b": a[1:]})
    assert stt._find_shared_tensors({"a": a[:1], "b": a[1:]}) == [{"a"}, {"b"}]  # same storage, no overlap
    stt.save({"a": a[:1], "b": a[1:]})


# The dtypes safetensors names that the library has no type for (yet): a file holding one is refused
# naming the tensor and the dtype, never read as something else.
_LIBRARY_LACKS = {torch.float8_e4m3fnuz: "F8_E4M3FNUZ", torch.float8_e5m2fnuz: "F8_E5M2FNUZ"}


def test_every_torch_dtype_round_trips(tmp_path):
    tensors = {str(t).split(".")[-1]: (torch.arange(6) % 2).to(t).reshape(2, 3) for t in stt._SIZE
               if t not in _LIBRARY_LACKS}
    assert {"float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64", "complex64", "bfloat16"} <= tensors.keys()
    stt.save_file(tensors, tmp_path / "all.safetensors")
    for load in (lambda: stt.load_file(tmp_path / "all.safetensors"),
                 lambda: stt.load_file(tmp_path / "all.safetensors", backend="pread"),
                 lambda: stt.load((tmp_path / "all.safetensors").read_bytes())):
        loaded = load()
        assert loaded.keys() == tensors.keys()
        assert all(loaded[k].dtype == v.dtype and torch.equal(loaded[k].view(torch.uint8), v.view(torch.uint8))
                   for k, v in tensors.items())


@pytest.mark.parametrize("dtype", sorted(_LIBRARY_LACKS, key=str))
def test_dtypes_the_library_lacks_are_refused_by_name(tmp_path, dtype):
    stt.save_file({"t": torch.zeros(4, dtype=dtype)}, tmp_path / "t.safetensors")
    with pytest.raises(st.SafetensorError, match=f"tensor 't': dtype {_LIBRARY_LACKS[dtype]} .*UnsupportedDType"):
        stt.load_file(tmp_path / "t.safetensors")


def test_float4_saves_as_safetensors_f4_pairs():
    """torch's float4_e2m1fn_x2 holds two values a byte: safetensors writes F4 with the last dimension doubled."""
    data = stt.save({"f": torch.zeros(2, 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)})
    (length,) = struct.unpack("<Q", data[:8])
    assert b'"dtype":"F4","shape":[2,4]' in data[8:8 + length] and len(data) == 8 + length + 4


def test_float8_reads_as_torch_float8(tmp_path):
    values = torch.tensor([0.5, -2.0, 448.0, 0.0])
    for dtype, code in ((torch.float8_e4m3fn, "F8_E4M3"), (torch.float8_e5m2, "F8_E5M2")):
        spec_bytes = values.to(dtype).view(torch.uint8).numpy()
        spec = st.TensorSpec(dtype=str(dtype).split(".")[-1], shape=[4], data_ptr=spec_bytes.ctypes.data, data_len=4)
        st.serialize_file({"f8": spec}, tmp_path / "f8.safetensors")
        with st.safe_open(tmp_path / "f8.safetensors", "pt") as f:
            assert f.get_slice("f8").get_dtype() == code
            got = f.get_tensor("f8")
        assert got.dtype == dtype and torch.equal(got.float(), values.to(dtype).float())


def test_zero_copy_tensors_are_private_views_of_the_file(tmp_path):
    stt.save_file({"w": torch.zeros(4)}, tmp_path / "w.safetensors")
    before = (tmp_path / "w.safetensors").read_bytes()
    with st.safe_open(tmp_path / "w.safetensors", "pt") as f:
        w = f.get_tensor("w")
        w += 1
        assert torch.equal(f.get_tensor("w"), w)  # one mapping per reader, as safetensors' storage
    assert (tmp_path / "w.safetensors").read_bytes() == before
    stt.save_file({"w": torch.ones(4)}, tmp_path / "w.safetensors")  # a new file, renamed over the mapped one
    assert torch.equal(w, torch.ones(4))


# --- slices ---

def test_torch_slices_follow_torch_indexing(tmp_path):
    a = torch.arange(50.0).reshape(10, 5)
    stt.save_file({"a": a}, tmp_path / "a.safetensors")
    with st.safe_open(tmp_path / "a.safetensors", "pt") as f:
        s = f.get_slice("a")
        for index in [slice(None), (), slice(2, None), (0, slice(None, 2)), (slice(2, None), -1), [], slice(None, 20),
                      (slice(None), slice(None, None, 2)), (Ellipsis, 1), (slice(-3, None), slice(1, -1))]:
            assert torch.equal(s[index], a[index]), index


def test_numpy_and_pread_slices_follow_the_reference_slicer(tmp_path):
    a = np.arange(50.0).reshape(10, 5)
    stn.save_file({"a": a}, tmp_path / "a.safetensors")
    for fw, backend in (("np", "mmap"), ("pt", "pread")):
        with st.safe_open(tmp_path / "a.safetensors", fw, backend=backend) as f:
            s = f.get_slice("a")
            for index in [slice(None), (), slice(2, None), (0, slice(None, 2)), (slice(2, None), -5), []]:
                assert np.array_equal(np.asarray(s[index]), a[index]), index
            assert np.array_equal(np.asarray(s[::2]), a)  # the reference ignores a step
            for index, message in [((slice(2, None), -6), "Invalid index -6 for dimension 1 of size 5"),
                                   ([0, 1], "Non empty lists are not implemented"),
                                   ((slice(2, None), 20), "Error during slicing [2:, 20] with shape [10, 5]: index 20 "
                                    "out of bounds for tensor dimension #1 of size 5"),
                                   (slice(None, 20), "Error during slicing [:20] with shape [10, 5]: index 19 out of "
                                    "bounds for tensor dimension #0 of size 10"),
                                   (slice(5, 2), "start 5 is past stop 2")]:
                with pytest.raises(st.SafetensorError) as err:
                    s[index]
                assert message in str(err.value)
            with pytest.raises(OverflowError):
                s[-2:]
            with pytest.raises(TypeError):
                s[..., 1]


# --- the reader's API and errors ---

def test_open_arguments_and_errors(tmp_path):
    stt.save_file({"a": torch.zeros(2)}, tmp_path / "a.safetensors")
    path = tmp_path / "a.safetensors"
    with pytest.raises(FileNotFoundError, match="No such file or directory: nothere"):
        st.safe_open("nothere", framework="pt")
    for kwargs, message in [({"framework": "jax"}, "framework jax is not supported"),
                            ({"framework": "nope"}, "framework nope is invalid"),
                            ({"framework": "pt", "device": "gpu"}, "device gpu is invalid"),
                            ({"framework": "np", "device": "cuda"}, "Device cuda is not supported for framework numpy"),
                            ({"framework": "pt", "backend": "direct"}, "backend 'direct' is invalid")]:
        with pytest.raises(st.SafetensorError, match=message):
            st.safe_open(path, **kwargs)
    with st.safe_open(path, "pt", None) as f:
        with pytest.raises(st.SafetensorError, match="File does not contain tensor b"):
            f.get_tensor("b")
        s = f.get_slice("a")
    with pytest.raises(st.SafetensorError, match="File is closed"):
        f.keys()
    assert torch.equal(s[:], torch.zeros(2))  # a slice outlives its reader
    with open(path, "rb") as handle, st._safe_open_handle(handle, "np") as g:
        assert np.array_equal(g.get_tensor("a"), np.zeros(2, np.float32))
    with pytest.raises(AttributeError):
        st._safe_open_handle(io.BytesIO(path.read_bytes()), "np")


def test_other_formats_through_the_same_api(tmp_path, testdata):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    h = np.arange(6, dtype=np.float16).reshape(2, 3)
    write_gguf(tmp_path / "m.gguf", [("x", GGML_F32, [3, 4], x.tobytes()), ("h", GGML_F16, [2, 3], h.tobytes())])
    with st.safe_open(tmp_path / "m.gguf", "np") as f:
        assert f.keys() == ["h", "x"] and f.offset_keys() == ["x", "h"]
        assert np.array_equal(f.get_tensor("x"), x) and np.array_equal(f.get_slice("h")[1], h[1])
    loaded = stt.load_file(testdata / "pytorch-zip" / "candle_test.pt")
    assert torch.equal(loaded["test"], torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]))
    stories = stt.load_file(testdata / "llama2c-stories260K" / "stories260K.bin")
    assert stories["model.embed_tokens.weight"].shape == (512, 64)
    stt.save_file(stories, tmp_path / "stories.safetensors")  # and on to safetensors
    assert all(torch.equal(v, stories[k]) for k, v in stt.load_file(tmp_path / "stories.safetensors").items())


def test_install_aliases_the_safetensors_modules():
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "safetensors" or k.startswith("safetensors.")}
    try:
        st.install()
        import safetensors
        import safetensors.torch
        from safetensors.numpy import load as np_load
        assert safetensors is st and safetensors.torch is stt and np_load is stn.load
        assert safetensors.__version__ == "0.8.0.dev0"
    finally:
        for k in [k for k in sys.modules if k == "safetensors" or k.startswith("safetensors.")]:
            del sys.modules[k]
        sys.modules.update(saved)
