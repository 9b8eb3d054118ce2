// Helpers for the PyTorch checkpoint tests: hand-made zip archives, pickles and checkpoints.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/pytorch/zip.hpp"
#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/source.hpp"

namespace wl::test {

inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i, v >>= 8) out.push_back(static_cast<char>(v & 0xff));
}
inline void set_le(std::string& bytes, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i, v >>= 8) bytes[at + static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
}
inline uint64_t get_le(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[at + static_cast<size_t>(i)]);
  return v;
}

struct ZipItem {
  std::string name;
  std::string data;
  uint16_t method = 0;  // what the headers claim; the data is written as given
};

struct ZipOptions {
  bool zip64 = false;            // ZIP64 extra fields everywhere and a ZIP64 end record
  bool data_descriptor = false;  // sizes and CRC after the data, zero in the local header (as torch writes)
};

// A zip archive: local headers and data, the central directory, the end record(s).
inline std::string zip_bytes(const std::vector<ZipItem>& items, const ZipOptions& opt = {}) {
  std::string out, cd;
  const uint16_t flags = opt.data_descriptor ? 8 : 0;
  for (const ZipItem& item : items) {
    const uint64_t offset = out.size(), size = item.data.size();
    const uint32_t crc = pytorch::crc32(item.data);
    std::string local_extra, central_extra;
    if (opt.zip64) {
      put_le(local_extra, 1, 2), put_le(local_extra, 16, 2), put_le(local_extra, size, 8), put_le(local_extra, size, 8);
      put_le(central_extra, 1, 2), put_le(central_extra, 24, 2), put_le(central_extra, size, 8);
      put_le(central_extra, size, 8), put_le(central_extra, offset, 8);
    }
    const uint64_t size32 = opt.zip64 ? 0xffffffff : size;
    put_le(out, 0x04034b50, 4), put_le(out, 45, 2), put_le(out, flags, 2), put_le(out, item.method, 2);
    put_le(out, 0, 4), put_le(out, opt.data_descriptor ? 0 : crc, 4);
    put_le(out, opt.data_descriptor ? 0 : size32, 4), put_le(out, opt.data_descriptor ? 0 : size32, 4);
    put_le(out, item.name.size(), 2), put_le(out, local_extra.size(), 2);
    out += item.name + local_extra + item.data;
    if (opt.data_descriptor) put_le(out, 0x08074b50, 4), put_le(out, crc, 4), put_le(out, size, 4), put_le(out, size, 4);

    put_le(cd, 0x02014b50, 4), put_le(cd, 45, 2), put_le(cd, 45, 2), put_le(cd, flags, 2), put_le(cd, item.method, 2);
    put_le(cd, 0, 4), put_le(cd, crc, 4), put_le(cd, size32, 4), put_le(cd, size32, 4);
    put_le(cd, item.name.size(), 2), put_le(cd, central_extra.size(), 2), put_le(cd, 0, 2), put_le(cd, 0, 2);
    put_le(cd, 0, 2), put_le(cd, 0, 4), put_le(cd, opt.zip64 ? 0xffffffff : offset, 4);
    cd += item.name + central_extra;
  }
  const uint64_t cd_offset = out.size();
  out += cd;
  if (opt.zip64) {
    const uint64_t eocd64 = out.size();
    put_le(out, 0x06064b50, 4), put_le(out, 44, 8), put_le(out, 45, 2), put_le(out, 45, 2), put_le(out, 0, 4);
    put_le(out, 0, 4), put_le(out, items.size(), 8), put_le(out, items.size(), 8), put_le(out, cd.size(), 8);
    put_le(out, cd_offset, 8);
    put_le(out, 0x07064b50, 4), put_le(out, 0, 4), put_le(out, eocd64, 8), put_le(out, 1, 4);
  }
  put_le(out, 0x06054b50, 4), put_le(out, 0, 2), put_le(out, 0, 2);
  put_le(out, opt.zip64 ? 0xffff : items.size(), 2), put_le(out, opt.zip64 ? 0xffff : items.size(), 2);
  put_le(out, opt.zip64 ? 0xffffffff : cd.size(), 4), put_le(out, opt.zip64 ? 0xffffffff : cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

// Pickle fragments, opcode by opcode (protocol 2 spellings unless noted).
namespace pk {
inline std::string proto(int v) { return std::string("\x80", 1) + static_cast<char>(v); }
inline std::string str(std::string_view s) {
  std::string out = "X";
  put_le(out, s.size(), 4);
  return out + std::string(s);
}
inline std::string integer(int64_t v) {
  if (v >= 0 && v < 256) return std::string("K") + static_cast<char>(v);
  std::string out = "\x8a\x08";
  put_le(out, static_cast<uint64_t>(v), 8);
  return out;
}
inline std::string global(std::string_view module, std::string_view name) {
  return "c" + std::string(module) + "\n" + std::string(name) + "\n";
}
inline const std::string kMark = "(", kTuple = "t", kEmptyTuple = ")", kReduce = "R", kStop = ".", kFalse = "\x89";
inline const std::string kEmptyDict = "}", kSetItems = "u", kPersId = "Q";

inline std::string tuple(const std::vector<int64_t>& values) {
  std::string out = kMark;
  for (int64_t v : values) out += integer(v);
  return out + kTuple;
}
// A dict of already-pickled values.
inline std::string dict(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = kEmptyDict + kMark;
  for (const auto& [k, v] : entries) out += str(k) + v;
  return out + kSetItems;
}
inline std::string ordered_dict(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = global("collections", "OrderedDict") + kEmptyTuple + kReduce + kMark;
  for (const auto& [k, v] : entries) out += str(k) + v;
  return out + kSetItems;
}
}  // namespace pk

// A tensor as torch.save pickles it: _rebuild_tensor_v2 of a persistent-id storage.
struct TensorSpec {
  std::string storage_type = "FloatStorage";
  std::string key = "0";
  int64_t numel = 0;  // of the storage
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

inline std::string tensor_pickle(const TensorSpec& t) {
  using namespace pk;
  return global("torch._utils", "_rebuild_tensor_v2") + kMark + kMark + str("storage") +
         global("torch", t.storage_type) + str(t.key) + str("cpu") + integer(t.numel) + kTuple + kPersId +
         integer(t.offset) + tuple(t.size) + tuple(t.stride) + kFalse + ordered_dict({}) + kTuple + kReduce;
}

// data.pkl of an OrderedDict of tensors.
inline std::string state_dict_pickle(const std::vector<std::pair<std::string, TensorSpec>>& tensors) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [name, t] : tensors) entries.emplace_back(name, tensor_pickle(t));
  return pk::proto(2) + pk::ordered_dict(entries) + pk::kStop;
}

// A checkpoint zip: <top>/data.pkl, <top>/data/<key> per storage, <top>/byteorder (unless empty), version.
inline std::string checkpoint_bytes(const std::string& pickle, const std::map<std::string, std::string>& storages,
                                    const std::string& byteorder = "little", const std::string& top = "archive",
                                    const ZipOptions& opt = {}) {
  std::vector<ZipItem> items{{top + "/data.pkl", pickle}};
  if (!byteorder.empty()) items.push_back({top + "/byteorder", byteorder});
  for (const auto& [key, data] : storages) items.push_back({top + "/data/" + key, data});
  items.push_back({top + "/version", "3\n"});
  return zip_bytes(items, opt);
}

template <typename T>
std::string le_bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A tensor's logical values (row-major, converted to its own dtype) read through WeightSource.
inline std::string read_tensor(const Catalogue& c, const std::string& name) {
  const WeightSource source("pytorch", "test", c);
  const TensorInfo& info = source.at(name);
  std::string out(info.numel() * dtype_size(info.dtype), '\0');
  source.read(info, info.dtype, out.data());
  if (const std::optional<TensorView> view = source.view(info); view && !out.empty()) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(view->raw()), out.size()), out) << name << ": view() != read()";
  }
  if (const TensorView loaded = source.load(info); !out.empty()) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(loaded.raw()), out.size()), out) << name << ": load() != read()";
  }
  return out;
}

}  // namespace wl::test
