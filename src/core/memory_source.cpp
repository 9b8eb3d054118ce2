// Memory regions as byte sources, and a tree of them as an opener.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl {

MemoryRegion MemoryRegion::copy_of(const void* data, uint64_t size) {
  auto bytes = std::make_shared<std::vector<std::byte>>(size);
  if (size) std::memcpy(bytes->data(), data, size);
  return {bytes->data(), size, bytes};
}

MemoryRegion MemoryRegion::of_string(std::string bytes) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  return {reinterpret_cast<const std::byte*>(owned->data()), owned->size(), owned};
}

namespace {

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, MemoryRegion region) : name_(std::move(name)), region_(std::move(region)) {
    if (!region_.data && region_.size)
      throw Error(ErrorCode::InvalidArgument, fmt::format("a memory region of {} bytes at a null address", region_.size),
                  name_);
  }
  const std::string& name() const noexcept override { return name_; }
  uint64_t size() const noexcept override { return region_.size; }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override {
    if (offset >= region_.size) return 0;
    const uint64_t n = std::min(length, region_.size - offset);
    std::memcpy(dst, region_.data + offset, n);
    return n;
  }
  // The region is its own mapping: the engine copies and converts straight out of it.
  SourceKind kind() const noexcept override { return SourceKind::Memory; }
  const std::byte* mapping() const override { return region_.data; }
  std::optional<uint64_t> resident_bytes() const override { return region_.size; }

 private:
  std::string name_;
  MemoryRegion region_;
};

}  // namespace

std::shared_ptr<ByteSource> memory_source(std::string name, MemoryRegion region) {
  return std::make_shared<MemorySource>(std::move(name), std::move(region));
}

void MemoryOpener::add(const std::string& name, MemoryRegion region) { files_[name] = memory_source(name, std::move(region)); }

void MemoryOpener::add(std::shared_ptr<ByteSource> source) {
  const std::string name = source->name();
  files_[name] = std::move(source);
}

std::shared_ptr<ByteSource> MemoryOpener::open(const std::string& name) const {
  const auto it = files_.find(name);
  if (it != files_.end()) return it->second;
  throw Error(is_directory(name) ? ErrorCode::InvalidArgument : ErrorCode::FileNotFound,
              is_directory(name) ? "is a directory, not a file" : "no such file among the memory regions", name);
}

bool MemoryOpener::exists(const std::string& name) const { return files_.count(name) || is_directory(name); }

bool MemoryOpener::is_directory(const std::string& name) const {
  if (name == "." || name.empty()) return !files_.empty();
  const std::string prefix = name.back() == '/' ? name : name + "/";
  const auto it = files_.lower_bound(prefix);
  return it != files_.end() && it->first.starts_with(prefix);
}

std::vector<std::string> MemoryOpener::list(const std::string& directory) const {
  std::string dir = directory.empty() ? "." : directory;
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "m/" lists as "m" does
  std::vector<std::string> out;
  for (const auto& [name, source] : files_)
    if (parent(name) == dir) out.push_back(name);
  return out;  // std::map keeps them sorted
}

}  // namespace wl
