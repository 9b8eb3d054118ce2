// A restricted unpickler for the data.pkl of a PyTorch checkpoint (pickle protocols 2 to 5).
//
// Nothing is ever executed: the pickle is turned into a tree of plain values. A global may only
// be one of an allow-list (collections.OrderedDict, torch._utils._rebuild_tensor_v2 /
// _rebuild_parameter / _rebuild_parameter_with_state, the torch.<T>Storage types, torch dtypes,
// set and frozenset, which protocols 2 and 3 spell as globals);
// any other is PickleGlobalNotAllowed the moment the pickle names it. Storages (persistent ids)
// and rebuilt tensors become Storage and Tensor values that describe where the data is.
// Every allocation is bounded by the bytes at hand and by PickleLimits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "weightloader/dtype.hpp"

namespace wl::pytorch {

using ObjId = uint32_t;

enum class Kind : uint8_t {
  None, Bool, Int, BigInt, Float, String, Bytes, Tuple, List, Dict, Set, Global, Storage, Tensor,
};

// The allowed globals.
enum class Global : uint8_t {
  OrderedDict, RebuildTensorV2, RebuildParameter, RebuildParameterWithState, Set, StorageType, TorchDType,
};

struct Object {
  Kind kind = Kind::None;
  Global global = Global::OrderedDict;  // Global: which one
  DType dtype = DType::F32;             // Global StorageType / TorchDType: the element type
  int64_t integer = 0;                  // Bool, Int; Storage, Tensor: index into Pickle::storages / tensors
  double real = 0;                      // Float
  std::string_view text;                // String, Bytes (points into the pickle's bytes)
  std::vector<ObjId> items;             // Tuple, List, Set: elements; Dict: key, value, key, value, ...
};

// A storage named by a persistent id ('storage', torch.<T>Storage, key, location, numel). One per key.
struct StorageDesc {
  DType dtype = DType::F32;
  std::string_view key;  // the zip entry is <archive>/data/<key>
  uint64_t numel = 0;
};

// A tensor rebuilt by _rebuild_tensor_v2. Values are as pickled; the catalogue checks them.
struct TensorDesc {
  uint32_t storage = 0;  // index into Pickle::storages
  int64_t offset = 0;    // storage offset, in elements
  std::vector<int64_t> size, stride;
};

struct Pickle {
  std::vector<Object> objects;
  std::vector<StorageDesc> storages;
  std::vector<TensorDesc> tensors;
  ObjId root = 0;

  const Object& at(ObjId id) const { return objects[id]; }
};

// Bounds on what a pickle may make the reader hold; exceeding one is PickleLimitExceeded.
struct PickleLimits {
  uint64_t max_bytes = 1ull << 30;    // size of data.pkl
  uint64_t max_values = 1ull << 23;   // objects created plus references held by containers
  uint64_t max_memo = 1ull << 23;     // memo entries
  uint64_t max_stack = 1ull << 20;    // values on the stack
  uint64_t max_marks = 256;           // MARKs open at once (the nesting of tuples, lists, dicts being built)
};

// Parses `bytes`, which must outlive the result (strings point into it). `file` names the
// checkpoint in errors, which also give the byte position and opcode. Throws PickleInvalid,
// PickleGlobalNotAllowed, PickleLimitExceeded, UnsupportedDType (a storage type weightloader
// cannot hold) and StorageInvalid (one storage key declared with two types or sizes).
Pickle unpickle(std::string_view bytes, const std::string& file, const PickleLimits& limits = {});

// "str", "dict", "torch.Tensor", ...: how a value is named in messages.
std::string_view kind_name(Kind kind);
// The same with its article ("an int", "a dict"), for sentences.
std::string kind_with_article(Kind kind);

}  // namespace wl::pytorch
