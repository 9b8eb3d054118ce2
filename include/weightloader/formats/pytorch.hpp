// PyTorch checkpoints written by torch.save since PyTorch 1.6 (`.bin`, `.pt`, `.pth`): a zip
// archive of stored (uncompressed) entries under one top folder of any name: `data.pkl` (the
// pickled object), `data/<key>` (the raw bytes of each storage), `byteorder` (absent = little).
//
// Reading never executes the pickle. data.pkl is read by a restricted unpickler (protocols 2 to 5)
// that allows only collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter /
// _rebuild_parameter_with_state, the torch.<T>Storage types (float, double, half, bfloat16, long,
// int, short, char, byte, bool), torch dtypes, and set / frozenset (which protocols 2 and 3 spell
// as globals); any other global (os.system, builtins.eval, a model class, ...) is
// PickleGlobalNotAllowed, naming it. Tensors point straight into the zip file:
// TensorInfo::offset is the storage entry's data plus the storage offset; several tensors may
// share a storage; non-contiguous tensors get TensorInfo::strides; a big-endian checkpoint gets a
// byte-swapping decoder (a strided big-endian tensor is UnsupportedLayout).
//
// Which tensors: the checkpoint must be a dict (or OrderedDict).
//  - With `key`, the state dict is the value under that top-level key.
//  - Without, if the top level holds a tensor directly, the top level is the state dict;
//    otherwise the state dict is the single top-level entry whose value is a dict of tensors (its
//    keys all strings, its values all tensors or dicts of tensors) — e.g. `state_dict`, `model`,
//    `module`, `model_state_dict` beside `epoch` or `optimizer`. None is StateDictNotFound;
//    several are StateDictAmbiguous, and the message lists their keys. An empty dict is an empty
//    state dict.
//  - In the state dict, nested dicts are flattened with dotted names ({"encoder": {"w": t}} gives
//    "encoder.w"), as module state dicts name their tensors; values that are neither tensors nor
//    dicts (and non-string keys) are skipped. Two routes to one name is DuplicateTensorName.
// Metadata: "pytorch.state_dict_key" = the top-level key used, when there is one.
//
// Pre-1.6 ("legacy") checkpoints — a sequence of pickles starting with the magic number
// 0x1950a86a20f9469cfc6c, or a tar archive — are LegacyFormat, with how to convert them.
#pragma once

#include <string>

#include "weightloader/format.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Reads and validates the zip structure and data.pkl of a source (never the tensor data). Throws
// ZipInvalid, ZipEntryCompressed, PickleInvalid, PickleGlobalNotAllowed, PickleLimitExceeded,
// LegacyFormat, StateDictNotFound, StateDictAmbiguous, StorageInvalid, TensorOutOfStorage,
// UnsupportedLayout, UnsupportedDType, DuplicateTensorName and ValidationOverflow.
WL_API Catalogue read_pytorch_catalogue(const ByteSource& source, const std::string& key = "");
WL_API Catalogue read_pytorch_catalogue(const std::string& path, const std::string& key = "");  // by name, through local_opener()

// The format entry "pytorch": sniffs a zip whose first entry is a data.pkl or lies in a folder,
// and the legacy formats (so that reading them explains how to convert). Reads with the default key.
WL_API const FileFormat& pytorch_format();

}  // namespace wl
