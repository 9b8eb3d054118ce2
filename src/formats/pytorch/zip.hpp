// A zip archive read in place (PyTorch checkpoints are zips of stored entries): the central
// directory and every local header are validated, so that each entry's data can be addressed by
// its absolute file offset without extracting anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weightloader/byte_source.hpp"

namespace wl::pytorch {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;       // 0 = stored; anything else is compressed
  uint16_t flags = 0;        // general purpose bits (bit 0: encrypted)
  uint32_t crc32 = 0;
  uint64_t data_offset = 0;  // absolute file offset of the entry's first stored byte
  uint64_t size = 0;         // stored bytes (for a stored entry, also the uncompressed size)
};

class ZipArchive {
 public:
  // Reads the end-of-central-directory record (ZIP64 when present), the central directory and each
  // local header. Throws ZipInvalid naming the rule broken and the offending numbers.
  explicit ZipArchive(const ByteSource& file);

  const std::vector<ZipEntry>& entries() const noexcept { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The entry, which must be stored uncompressed and unencrypted (ZipEntryCompressed otherwise).
  const ZipEntry& stored(const ZipEntry& entry) const;
  // A stored entry's bytes, checked against its CRC-32; for small entries such as data.pkl.
  std::string read(const ZipEntry& entry) const;

 private:
  const ByteSource& file_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
};

// CRC-32 (ISO-HDLC, as zip uses) of `data`, continuing from `crc`.
uint32_t crc32(std::string_view data, uint32_t crc = 0);

}  // namespace wl::pytorch
