#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

namespace wl {

namespace {

// The bytes formats recognise a file by: its first 4096 (all of it when shorter).
std::vector<std::byte> read_head(const ByteSource& source) {
  std::vector<std::byte> head(std::min<uint64_t>(source.size(), 4096));
  source.read_exact(0, head.data(), head.size());
  return head;
}

}  // namespace

void FormatList::add(FileFormat format) {
  if (find(format.name)) throw Error(ErrorCode::InvalidArgument, fmt::format("a format named '{}' is already listed", format.name));
  formats_.push_back(std::move(format));
}

const FileFormat* FormatList::find(const std::string& name) const {
  for (const FileFormat& f : formats_)
    if (f.name == name) return &f;
  return nullptr;
}

const FileFormat* FormatList::detect(const ByteSource& source) const {
  const std::vector<std::byte> head = read_head(source);
  for (const FileFormat& f : formats_)
    if (f.sniff(head, source.size())) return &f;
  return nullptr;
}

// A file no format recognises: HeaderTooSmall when it is empty, Truncated when a format would recognise its
// bytes were the file longer (e.g. a safetensors length prefix and '{' with the header cut off);
// InvalidArgument, listing the formats tried, otherwise.
const FileFormat& FormatList::detect_or_throw(const ByteSource& source) const {
  if (const FileFormat* f = detect(source)) return *f;
  const uint64_t size = source.size();
  if (size == 0) throw Error(ErrorCode::HeaderTooSmall, "the file is empty (0 bytes): not a checkpoint", source.name());
  const std::vector<std::byte> head = read_head(source);
  for (const FileFormat& f : formats_)
    if (f.sniff(head, UINT64_MAX))
      throw Error(ErrorCode::Truncated,
                  fmt::format("the file ends after {} bytes, inside its {} header: it was cut short", size, f.name),
                  source.name());
  std::vector<std::string> tried;
  for (const FileFormat& f : formats_) tried.push_back(f.name);
  throw Error(ErrorCode::UnknownFormat,
              fmt::format("not a checkpoint in any known format (tried: {})", fmt::join(tried, ", ")),
              source.name());
}

std::unique_ptr<WeightSource> open_files(const FileFormat& format, const std::vector<std::string>& names,
                                         const std::string& origin, std::shared_ptr<const Opener> opener) {
  if (!opener) opener = local_opener();
  Catalogue merged;
  for (const std::string& name : names) {
    Catalogue c = format.read_catalogue(*opener->open(name), *opener);
    merged.append(c);
    merged.metadata.merge(c.metadata);
  }
  return std::make_unique<WeightSource>(format.name, origin, std::move(merged), std::move(opener));
}

}  // namespace wl
