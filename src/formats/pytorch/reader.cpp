// Reading a PyTorch checkpoint's catalogue: zip → data.pkl → state dict → tensors pointing into the
// storage entries. Also the format entry that recognises such files.
#include <algorithm>
#include <array>
#include <span>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "formats/pytorch/byteswap.hpp"
#include "formats/pytorch/legacy.hpp"
#include "formats/pytorch/pickle.hpp"
#include "formats/pytorch/state_dict.hpp"
#include "formats/pytorch/zip.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/pytorch.hpp"

namespace wl {
namespace {

using namespace pytorch;

constexpr std::string_view kZipMagic = "PK\x03\x04";
constexpr uint64_t kMaxByteorderBytes = 16;

bool starts_with(std::span<const std::byte> head, std::string_view prefix) {
  return head.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), head.begin(), [](char c, std::byte b) {
           return static_cast<std::byte>(c) == b;
         });
}

// The top folder: the one folder holding data.pkl (its name varies: "archive", the file's stem, ...).
std::string top_folder(const ZipArchive& zip, const std::string& path) {
  std::vector<std::string> folders;
  for (const ZipEntry& e : zip.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && slash > 0 && e.name.substr(slash + 1) == "data.pkl")
      folders.push_back(e.name.substr(0, slash));
  }
  if (folders.empty())
    throw Error(ErrorCode::ZipInvalid,
                "no <folder>/data.pkl entry: a zip archive, but not a PyTorch checkpoint written by torch.save", path);
  if (folders.size() > 1)
    throw Error(ErrorCode::ZipInvalid,
                fmt::format("data.pkl in several top folders ('{}'); a checkpoint has one", fmt::join(folders, "', '")),
                path);
  return folders.front();
}

bool big_endian(const ZipArchive& zip, const std::string& top, const std::string& path) {
  const ZipEntry* e = zip.find(top + "/byteorder");
  if (!e) return false;  // written before the entry existed: little-endian
  if (e->size > kMaxByteorderBytes)
    throw Error(ErrorCode::StorageInvalid,
                fmt::format("the byteorder entry is {} bytes; expected \"little\" or \"big\"", e->size), path);
  const std::string order = zip.read(*e);
  if (order == "little") return false;
  if (order == "big") return true;
  throw Error(ErrorCode::StorageInvalid, fmt::format("byteorder \"{}\"; expected \"little\" or \"big\"", order), path);
}

bool mul_fits(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add_fits(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

class CatalogueBuilder {
 public:
  CatalogueBuilder(const ZipArchive& zip, const Pickle& pickle, std::string top, bool big_endian, const std::string& path)
      : zip_(zip), pickle_(pickle), top_(std::move(top)), big_endian_(big_endian), path_(path) {}

  TensorInfo build(const NamedTensor& named) const {
    const TensorDesc& t = pickle_.tensors[named.tensor];
    const StorageDesc& s = pickle_.storages[t.storage];
    const ZipEntry& entry = storage_entry(s);
    const uint64_t esize = dtype_size(s.dtype);
    const auto out_of_storage = [&](const std::string& why) {
      return Error(ErrorCode::TensorOutOfStorage, fmt::format("{} (storage '{}' holds {} {} elements)", why, s.key,
                                                              s.numel, dtype_name(s.dtype)),
                   path_, named.name);
    };

    TensorInfo info;
    info.name = named.name;
    info.dtype = s.dtype;
    if (t.offset < 0) throw out_of_storage(fmt::format("negative storage offset {}", t.offset));
    for (size_t d = 0; d < t.size.size(); ++d) {
      if (t.size[d] < 0) throw out_of_storage(fmt::format("negative size {} in dim {}", t.size[d], d));
      if (t.stride[d] < 0) throw out_of_storage(fmt::format("negative stride {} in dim {}", t.stride[d], d));
      info.shape.push_back(static_cast<uint64_t>(t.size[d]));
    }
    const uint64_t offset = static_cast<uint64_t>(t.offset);
    uint64_t numel = 1;
    for (uint64_t d : info.shape)
      if (!mul_fits(numel, d, numel))
        throw Error(ErrorCode::ValidationOverflow, fmt::format("element count of shape {} overflows u64",
                                                               shape_to_string(info.shape)),
                    path_, named.name);

    // The furthest element, and whether the strides are row-major (size-1 dims may have any stride).
    uint64_t last = offset, expected = 1;
    bool contiguous = true;
    for (size_t d = info.shape.size(); d-- > 0;) {
      const uint64_t size = info.shape[d], stride = static_cast<uint64_t>(t.stride[d]);
      uint64_t reach = 0;
      if (numel > 0 && (!mul_fits(size - 1, stride, reach) || !add_fits(last, reach, last)))
        throw out_of_storage(fmt::format("shape {} with strides ({}) from offset {} overflows",
                                         shape_to_string(info.shape), fmt::join(t.stride, ", "), offset));
      if (numel > 0 && size != 1 && stride != expected) contiguous = false;
      expected *= size;  // exact while numel > 0 (bounded by it); unused otherwise
    }
    if (numel == 0 ? offset > s.numel : last >= s.numel)
      throw out_of_storage(numel == 0 ? fmt::format("storage offset {} lies past the storage's end", offset)
                                      : fmt::format("shape {} with strides ({}) from offset {} reaches element {}",
                                                    shape_to_string(info.shape), fmt::join(t.stride, ", "), offset,
                                                    last));
    info.offset = entry.data_offset + offset * esize;  // within the entry: offset <= storage numel
    info.nbytes = numel == 0 ? 0 : (contiguous ? numel : last - offset + 1) * esize;
    if (!contiguous) info.strides = t.stride;
    if (big_endian_ && esize > 1) {
      if (!contiguous)
        throw Error(ErrorCode::UnsupportedLayout,
                    fmt::format("a big-endian tensor with strides ({}) cannot be byte-swapped on the way in; save "
                                "it contiguous (tensor.contiguous()) or on a little-endian machine",
                                fmt::join(t.stride, ", ")),
                    path_, named.name);
      info.decoder = big_endian_decoder(s.dtype);
    }
    return info;
  }

 private:
  // The storage's zip entry, which must hold exactly the storage's declared elements.
  const ZipEntry& storage_entry(const StorageDesc& s) const {
    const std::string name = fmt::format("{}/data/{}", top_, s.key);
    const ZipEntry* e = zip_.find(name);
    if (!e) throw Error(ErrorCode::StorageInvalid, fmt::format("storage '{}' has no entry \"{}\"", s.key, name), path_);
    zip_.stored(*e);
    uint64_t bytes = 0;
    if (!mul_fits(s.numel, dtype_size(s.dtype), bytes) || bytes != e->size)
      throw Error(ErrorCode::StorageInvalid,
                  fmt::format("storage '{}' declares {} {} elements but entry \"{}\" holds {} bytes", s.key, s.numel,
                              dtype_name(s.dtype), name, e->size),
                  path_);
    return *e;
  }

  const ZipArchive& zip_;
  const Pickle& pickle_;
  std::string top_;
  bool big_endian_;
  const std::string& path_;
};

// A legacy checkpoint is refused with the way out.
void reject_legacy(const ByteSource& file) {
  std::array<std::byte, kLegacySniffBytes> head{};
  const uint64_t got = file.read_up_to(0, head.data(), head.size());
  if (const auto kind = legacy_checkpoint_kind(std::span(head.data(), got)))
    throw Error(ErrorCode::LegacyFormat,
                fmt::format("{}. weightloader reads the zip format of PyTorch 1.6 and later: convert it with a recent "
                            "PyTorch, e.g. python -c \"import torch; torch.save(torch.load('old.pt'), 'new.pt')\" "
                            "(load only files you trust: this runs their pickle)",
                            *kind),
                file.name());
}

bool sniff_pytorch(std::span<const std::byte> head, uint64_t) {
  if (legacy_checkpoint_kind(head)) return true;
  constexpr size_t kNameAt = 30;
  if (!starts_with(head, kZipMagic) || head.size() < kNameAt) return false;
  const size_t len = static_cast<size_t>(head[26]) | static_cast<size_t>(head[27]) << 8;
  if (head.size() - kNameAt < len) return false;
  const std::string_view name(reinterpret_cast<const char*>(head.data()) + kNameAt, len);
  return name.ends_with("data.pkl") || name.find('/') != std::string_view::npos;
}

}  // namespace

Catalogue read_pytorch_catalogue(const ByteSource& file, const std::string& key) {
  const std::string& path = file.name();
  reject_legacy(file);
  const ZipArchive zip(file);
  const std::string top = top_folder(zip, path);
  const bool big = big_endian(zip, top, path);

  const ZipEntry& pkl = zip.stored(*zip.find(top + "/data.pkl"));
  const PickleLimits limits;
  if (pkl.size > limits.max_bytes)
    throw Error(ErrorCode::PickleLimitExceeded,
                fmt::format("data.pkl is {} bytes; the limit is {}", pkl.size, limits.max_bytes), path);
  const std::string bytes = zip.read(pkl);
  const Pickle pickle = unpickle(bytes, path, limits);
  const StateDict sd = find_state_dict(pickle, key, path);

  Catalogue out;
  out.files = {path};  // every tensor's file: index 0
  const CatalogueBuilder builder(zip, pickle, top, big, path);
  out.tensors.reserve(sd.tensors.size());
  for (const NamedTensor& t : sd.tensors) out.tensors.push_back(builder.build(t));
  if (!sd.key.empty()) out.metadata.emplace("pytorch.state_dict_key", sd.key);
  return out;
}

Catalogue read_pytorch_catalogue(const std::string& path, const std::string& key) {
  return read_pytorch_catalogue(*local_opener()->open(path), key);
}

const FileFormat& pytorch_format() {
  static const FileFormat format{"pytorch", sniff_pytorch, [](const ByteSource& source, const Opener&) {
                                   return read_pytorch_catalogue(source);
                                 }};
  return format;
}

}  // namespace wl
