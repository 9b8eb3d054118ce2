"""One exception class per error code, whichever entry point meets the bad input: LLM, load_into,
safe_open, a loader's get_weights and the registry raise the same class for the same input."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch

import weightloader as wl
from weightloader.errors import PermissionDeniedError


def entry_points(path):
    """(name, call) for every way of opening `path`."""
    return [
        ("LLM", lambda: wl.LLM(str(path))),
        ("load_into", lambda: wl.load_into(torch.nn.Module(), path)),
        ("safe_open", lambda: wl.safe_open(str(path), framework="pt")),
        ("LocalWeightLoader", lambda: wl.LocalWeightLoader().get_weights(path)),
        ("registry", lambda: wl.WeightLoaderRegistry.create("local").get_weights(path)),
    ]


def raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def same_class_everywhere(path, cls, text):
    for name, call in entry_points(path):
        err = raised(call)
        assert isinstance(err, cls), (name, type(err), err)
        assert text in str(err), (name, err)


def test_a_missing_path(tmp_path):
    same_class_everywhere(tmp_path / "absent.safetensors", wl.NotFoundError, "no such file")


def test_an_empty_file(tmp_path):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(b"")
    same_class_everywhere(path, wl.FormatError, "empty (0 bytes)")


def test_a_file_cut_inside_its_header(tmp_path):
    path = tmp_path / "cut.safetensors"
    header = b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header[:20])
    same_class_everywhere(path, wl.FormatError, "cut short")


def test_an_empty_folder_says_what_it_looked_for(tmp_path):
    for name, call in entry_points(tmp_path)[1:]:  # LLM: see below
        err = raised(call)
        assert isinstance(err, wl.NotFoundError), (name, type(err), err)
        assert "empty" in str(err) or "no weights found" in str(err), (name, err)
    assert isinstance(raised(lambda: wl.LLM(str(tmp_path))), wl.Error)


def test_an_unknown_loader_is_a_value_error_everywhere(tmp_path):
    calls = {
        "LLM": lambda: wl.LLM(str(tmp_path), weight_loader="no-such-loader"),
        "load_into": lambda: wl.load_into(torch.nn.Module(), tmp_path, loader="no-such-loader"),
        "registry.get": lambda: wl.WeightLoaderRegistry.get("no-such-loader"),
        "registry.create": lambda: wl.WeightLoaderRegistry.create("no-such-loader"),
        "CoreWeightLoader": lambda: wl.CoreWeightLoader("no-such-loader"),
    }
    for name, call in calls.items():
        err = raised(call)
        assert isinstance(err, wl.InvalidArgumentError) and isinstance(err, ValueError), (name, type(err), err)
        assert err.code == "UnknownLoader", (name, err)


def test_load_into_a_dict_is_a_type_error_naming_nn_module(tmp_path):
    err = raised(lambda: wl.load_into({"a": torch.zeros(1)}, tmp_path))
    assert isinstance(err, TypeError) and "torch.nn.Module" in str(err), err


PERMISSION_CHILD = r"""
import errno, os, sys, torch, weightloader as wl
from weightloader.errors import PermissionDeniedError
path = sys.argv[1]
calls = {"LLM": lambda: wl.LLM(path), "load_into": lambda: wl.load_into(torch.nn.Module(), path),
         "safe_open": lambda: wl.safe_open(path), "loader": lambda: wl.LocalWeightLoader().get_weights(path)}
for name, call in calls.items():
    try:
        call()
    except Exception as err:
        ok = (isinstance(err, PermissionError) and isinstance(err, wl.IoError) and isinstance(err, PermissionDeniedError)
              and err.errno == errno.EACCES)  # the number C++ had, not one read back from the message
        print(name, "ok" if ok else f"{type(err).__name__}: {err}")
"""


def test_permission_denied_is_a_permission_error_everywhere():
    folder = tempfile.mkdtemp(prefix="wl-permission-")  # not under pytest's 0700 folder: nobody must reach it
    os.chmod(folder, 0o755)
    path = pathlib.Path(folder) / "secret.safetensors"
    path.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    path.chmod(0)
    # As root every file is readable: the child then runs as nobody.
    as_nobody = (lambda: os.setuid(65534)) if os.geteuid() == 0 else None
    out = subprocess.run([sys.executable, "-c", PERMISSION_CHILD, str(path)], capture_output=True, text=True,
                         preexec_fn=as_nobody, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert [line for line in lines if line] == [f"{n} ok" for n in ("LLM", "load_into", "safe_open", "loader")], out.stdout
    assert PermissionDeniedError.__mro__[1] is wl.IoError
    shutil.rmtree(folder)
