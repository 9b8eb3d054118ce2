#include "formats/pytorch/zip.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::pytorch {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kEocd64Sig = 0x06064b50, kLocatorSig = 0x07064b50;
constexpr uint64_t kEocdBytes = 22, kLocatorBytes = 20, kEocd64Bytes = 56, kCentralBytes = 46, kLocalBytes = 30;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kSentinel32 = 0xffffffff;
constexpr uint16_t kSentinel16 = 0xffff;
constexpr uint16_t kFlagEncrypted = 1, kFlagDataDescriptor = 8;

uint64_t le(const std::byte* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint16_t le16(const std::byte* p) { return static_cast<uint16_t>(le(p, 2)); }
uint32_t le32(const std::byte* p) { return static_cast<uint32_t>(le(p, 4)); }
uint64_t le64(const std::byte* p) { return le(p, 8); }

// True when [a, a + b) ends at or before `limit`, without overflow.
bool add_fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

// Where the central directory is, from the end-of-central-directory record(s).
struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t limit = 0;  // the directory must end at or before this offset (the first end record)
};

class ZipParser {
 public:
  explicit ZipParser(const ByteSource& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorCode::ZipInvalid, message, file_.name());
  }

  Directory find_directory() const {
    const uint64_t size = file_.size();
    if (size < kEocdBytes)
      fail(fmt::format("{} bytes is too small for a zip archive (its end record alone is {} bytes)", size, kEocdBytes));
    const uint64_t tail_len = std::min(size, kEocdBytes + kMaxComment);
    std::vector<std::byte> tail(tail_len);
    file_.read_exact(size - tail_len, tail.data(), tail_len);
    // The end record is the last one whose comment reaches exactly to the end of the file.
    for (uint64_t pos = tail_len - kEocdBytes + 1; pos-- > 0;) {
      const std::byte* p = tail.data() + pos;
      if (le32(p) != kEocdSig || pos + kEocdBytes + le16(p + 20) != tail_len) continue;
      return parse_end(p, size - tail_len + pos);
    }
    fail("no end-of-central-directory record (is this a zip archive, and is it complete?)");
  }

  std::vector<ZipEntry> read_entries(const Directory& dir) const {
    std::vector<std::byte> cd(dir.size);
    file_.read_exact(dir.offset, cd.data(), dir.size);
    std::vector<ZipEntry> entries;
    entries.reserve(dir.entries);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < dir.entries; ++i) entries.push_back(central_entry(cd, pos, dir, i));
    if (pos != dir.size)
      fail(fmt::format("the central directory is {} bytes but its {} entries fill only {}", dir.size, dir.entries, pos));
    return entries;
  }

 private:
  Directory parse_end(const std::byte* p, uint64_t eocd_offset) const {
    if (le16(p + 4) != 0 || le16(p + 6) != 0)
      fail("multi-disk (split) zip archives are not supported");
    Directory dir{le16(p + 10), le32(p + 16), le32(p + 12), eocd_offset};
    if (le16(p + 8) != dir.entries)
      fail(fmt::format("end record counts {} entries on this disk but {} in total", le16(p + 8), dir.entries));
    if (eocd_offset >= kLocatorBytes) {
      std::array<std::byte, kLocatorBytes> loc{};
      file_.read_exact(eocd_offset - kLocatorBytes, loc.data(), loc.size());
      if (le32(loc.data()) == kLocatorSig) dir = parse_zip64_end(loc.data(), eocd_offset - kLocatorBytes, dir);
    }
    if (!add_fits(dir.offset, dir.size, dir.limit))
      fail(fmt::format("the central directory [{}, {} + {}) runs past its end record at offset {}", dir.offset,
                       dir.offset, dir.size, dir.limit));
    if (dir.entries > dir.size / kCentralBytes)
      fail(fmt::format("{} entries cannot fit in a central directory of {} bytes", dir.entries, dir.size));
    return dir;
  }

  // The ZIP64 locator (just before the end record) points at the ZIP64 end record, whose 64-bit
  // counts replace the 32-bit ones; a 32-bit field that is not the 0xFF.. sentinel must agree.
  Directory parse_zip64_end(const std::byte* loc, uint64_t loc_offset, const Directory& dir32) const {
    if (le32(loc + 4) != 0 || le32(loc + 16) > 1) fail("multi-disk (split) ZIP64 archives are not supported");
    const uint64_t at = le64(loc + 8);
    if (!add_fits(at, kEocd64Bytes, loc_offset))
      fail(fmt::format("the ZIP64 end record at offset {} overlaps its locator at offset {}", at, loc_offset));
    std::array<std::byte, kEocd64Bytes> r{};
    file_.read_exact(at, r.data(), r.size());
    const std::byte* p = r.data();
    if (le32(p) != kEocd64Sig) fail(fmt::format("no ZIP64 end record at offset {}, where the locator points", at));
    const uint64_t record = le64(p + 4);
    if (record < kEocd64Bytes - 12 || !add_fits(at + 12, record, loc_offset))
      fail(fmt::format("the ZIP64 end record's size {} does not fit before its locator", record));
    if (le32(p + 16) != 0 || le32(p + 20) != 0) fail("multi-disk (split) ZIP64 archives are not supported");
    const Directory dir{le64(p + 32), le64(p + 48), le64(p + 40), at};
    if (le64(p + 24) != dir.entries)
      fail(fmt::format("ZIP64 end record counts {} entries on this disk but {} in total", le64(p + 24), dir.entries));
    const auto agree = [&](const char* what, uint64_t v32, uint64_t sentinel, uint64_t v64) {
      if (v32 != sentinel && v32 != v64)
        fail(fmt::format("the end record's {} ({}) disagrees with the ZIP64 end record's ({})", what, v32, v64));
    };
    agree("entry count", dir32.entries, kSentinel16, dir.entries);
    agree("directory offset", dir32.offset, kSentinel32, dir.offset);
    agree("directory size", dir32.size, kSentinel32, dir.size);
    return dir;
  }

  // Fields of a ZIP64 extra block (id 1), each present only where the header holds the sentinel.
  struct Zip64Fields {
    uint64_t* usize = nullptr;
    uint64_t* csize = nullptr;
    uint64_t* offset = nullptr;
    uint32_t* disk = nullptr;
  };

  // Walks the extra blocks of a header; fills the ZIP64 fields asked for. Returns false if no ZIP64 block.
  bool parse_extra(const std::byte* p, uint64_t len, const Zip64Fields& want, const std::string& name) const {
    bool found = false;
    for (uint64_t pos = 0; pos < len;) {
      if (len - pos < 4) fail(fmt::format("entry \"{}\": extra field ends inside a block header", name));
      const uint16_t id = le16(p + pos), n = le16(p + pos + 2);
      pos += 4;
      if (n > len - pos) fail(fmt::format("entry \"{}\": extra block of {} bytes overruns the extra field", name, n));
      if (id == kZip64ExtraId && !found) {
        found = true;
        uint64_t at = 0;
        const auto take = [&](auto* field, size_t bytes) {
          if (!field) return;
          if (n - at < bytes) fail(fmt::format("entry \"{}\": ZIP64 extra block of {} bytes lacks a field", name, n));
          *field = static_cast<std::remove_pointer_t<decltype(field)>>(le(p + pos + at, bytes));
          at += bytes;
        };
        take(want.usize, 8);
        take(want.csize, 8);
        take(want.offset, 8);
        take(want.disk, 4);
      }
      pos += n;
    }
    return found;
  }

  ZipEntry central_entry(const std::vector<std::byte>& cd, uint64_t& pos, const Directory& dir, uint64_t index) const {
    if (cd.size() - pos < kCentralBytes)
      fail(fmt::format("central directory entry {} at offset {} is cut short", index, dir.offset + pos));
    const std::byte* p = cd.data() + pos;
    if (le32(p) != kCentralSig)
      fail(fmt::format("central directory entry {} at offset {} has a bad signature", index, dir.offset + pos));
    const uint64_t nlen = le16(p + 28), xlen = le16(p + 30), clen = le16(p + 32);
    if (cd.size() - pos - kCentralBytes < nlen + xlen + clen)
      fail(fmt::format("central directory entry {} at offset {} runs past the directory", index, dir.offset + pos));
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(p + kCentralBytes), nlen);
    e.flags = le16(p + 8);
    e.method = le16(p + 10);
    e.crc32 = le32(p + 16);
    uint64_t csize = le32(p + 20), usize = le32(p + 24), local = le32(p + 42);
    uint32_t disk = le16(p + 34);
    const Zip64Fields want{usize == kSentinel32 ? &usize : nullptr, csize == kSentinel32 ? &csize : nullptr,
                           local == kSentinel32 ? &local : nullptr, disk == kSentinel16 ? &disk : nullptr};
    const bool needs64 = want.usize || want.csize || want.offset || want.disk;
    if (!parse_extra(p + kCentralBytes + nlen, xlen, want, e.name) && needs64)
      fail(fmt::format("entry \"{}\": a size or offset is 0xFFFFFFFF but there is no ZIP64 extra field", e.name));
    pos += kCentralBytes + nlen + xlen + clen;
    if (e.name.empty()) fail(fmt::format("central directory entry {} has an empty name", index));
    if (disk != 0) fail(fmt::format("entry \"{}\" starts on disk {}; split archives are not supported", e.name, disk));
    if (e.method == 0 && csize != usize)
      fail(fmt::format("entry \"{}\" is stored but its sizes differ ({} stored, {} uncompressed)", e.name, csize, usize));
    e.size = csize;
    e.data_offset = local_data_offset(e, local, usize, dir.offset);
    return e;
  }

  // Checks the local header against the central one and returns where the data starts.
  uint64_t local_data_offset(const ZipEntry& e, uint64_t at, uint64_t usize, uint64_t data_limit) const {
    if (!add_fits(at, kLocalBytes + e.name.size(), data_limit))
      fail(fmt::format("entry \"{}\": local header at offset {} lies past the central directory at {}", e.name, at,
                       data_limit));
    std::vector<std::byte> h(kLocalBytes + e.name.size());
    file_.read_exact(at, h.data(), h.size());
    const std::byte* p = h.data();
    if (le32(p) != kLocalSig) fail(fmt::format("entry \"{}\": no local header at offset {}", e.name, at));
    if (le16(p + 26) != e.name.size() ||
        std::memcmp(p + kLocalBytes, e.name.data(), e.name.size()) != 0)
      fail(fmt::format("entry \"{}\": the local header at offset {} names another entry", e.name, at));
    if (le16(p + 8) != e.method)
      fail(fmt::format("entry \"{}\": compression method {} in the local header but {} in the directory", e.name,
                       le16(p + 8), e.method));
    const uint64_t xlen = le16(p + 28);
    const uint64_t data = at + kLocalBytes + e.name.size() + xlen;
    if (!add_fits(data, e.size, data_limit))
      fail(fmt::format("entry \"{}\": its {} bytes of data at offset {} run past the central directory at {}", e.name,
                       e.size, data, data_limit));
    if (!(le16(p + 6) & kFlagDataDescriptor)) {  // sizes are in the local header too: they must agree
      uint64_t lc = le32(p + 18), lu = le32(p + 22);
      if (lc == kSentinel32 || lu == kSentinel32) {
        std::vector<std::byte> extra(xlen);
        file_.read_exact(at + kLocalBytes + e.name.size(), extra.data(), xlen);
        if (!parse_extra(extra.data(), xlen, {&lu, &lc, nullptr, nullptr}, e.name))
          fail(fmt::format("entry \"{}\": local sizes are 0xFFFFFFFF but there is no ZIP64 extra field", e.name));
      }
      if (lc != e.size || lu != usize)
        fail(fmt::format("entry \"{}\": local header sizes ({} stored, {} uncompressed) differ from the directory's "
                         "({}, {})",
                         e.name, lc, lu, e.size, usize));
    }
    return data;
  }

  const ByteSource& file_;
};

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

uint32_t crc32(std::string_view data, uint32_t crc) {
  static constexpr std::array<uint32_t, 256> kTable = make_crc_table();
  crc = ~crc;
  for (char ch : data) crc = kTable[(crc ^ static_cast<uint8_t>(ch)) & 0xff] ^ (crc >> 8);
  return ~crc;
}

ZipArchive::ZipArchive(const ByteSource& file) : file_(file) {
  const ZipParser parser(file);
  entries_ = parser.read_entries(parser.find_directory());
  by_name_.reserve(entries_.size());
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!by_name_.emplace(entries_[i].name, i).second)
      parser.fail(fmt::format("entry \"{}\" appears twice in the central directory", entries_[i].name));
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipArchive::stored(const ZipEntry& entry) const {
  if (entry.flags & kFlagEncrypted)
    throw Error(ErrorCode::ZipEntryCompressed, fmt::format("entry \"{}\" is encrypted", entry.name), file_.name());
  if (entry.method != 0)
    throw Error(ErrorCode::ZipEntryCompressed,
                fmt::format("entry \"{}\" is compressed (method {}{}); PyTorch writes entries stored so that they can "
                            "be read in place: re-save the checkpoint with torch.save, or rezip it without compression "
                            "(zip -0)",
                            entry.name, entry.method, entry.method == 8 ? ", deflate" : ""),
                file_.name());
  return entry;
}

std::string ZipArchive::read(const ZipEntry& entry) const {
  std::string bytes = file_.read_string(stored(entry).data_offset, entry.size);
  if (const uint32_t got = crc32(bytes); got != entry.crc32)
    throw Error(ErrorCode::ZipInvalid,
                fmt::format("entry \"{}\" is corrupt: CRC-32 {:08x}, the directory says {:08x}", entry.name, got,
                            entry.crc32),
                file_.name());
  return bytes;
}

}  // namespace wl::pytorch
