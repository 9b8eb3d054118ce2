// The zip reader: entries located in place, ZIP64, and one hand-broken archive per rule.
#include "core/file.hpp"
#include "formats/pytorch/zip.hpp"

#include <gtest/gtest.h>

#include "formats/pytorch/pt_test_util.hpp"

namespace wl::test {
namespace {

using pytorch::ZipArchive;

const std::vector<ZipItem> kItems = {{"top/data.pkl", "pickle bytes"}, {"top/data/0", std::string(64, 'x')},
                                     {"top/version", "3\n"}};

// Builds `bytes` into a file and opens it as an archive, returning the entries' data as read in place.
std::vector<std::pair<std::string, std::string>> entries_of(const std::string& bytes) {
  TempDir dir;
  write_bytes(dir.file("a.zip"), bytes);
  const File file(dir.file("a.zip"));
  const ZipArchive zip(file);
  std::vector<std::pair<std::string, std::string>> out;
  for (const pytorch::ZipEntry& e : zip.entries()) out.emplace_back(e.name, file.read_string(e.data_offset, e.size));
  return out;
}

std::string zip_error(ErrorCode code, const std::string& bytes) {
  TempDir dir;
  write_bytes(dir.file("a.zip"), bytes);
  return expect_error(code, [&] {
    const File file(dir.file("a.zip"));
    const ZipArchive zip(file);
  });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

std::vector<std::pair<std::string, std::string>> expected() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ZipItem& i : kItems) out.emplace_back(i.name, i.data);
  return out;
}

TEST(PytorchZip, LocatesStoredEntries) { EXPECT_EQ(entries_of(zip_bytes(kItems)), expected()); }

TEST(PytorchZip, LocatesEntriesWithDataDescriptors) {
  EXPECT_EQ(entries_of(zip_bytes(kItems, {.zip64 = false, .data_descriptor = true})), expected());
}

TEST(PytorchZip, ReadsZip64Archives) {
  EXPECT_EQ(entries_of(zip_bytes(kItems, {.zip64 = true, .data_descriptor = false})), expected());
  EXPECT_EQ(entries_of(zip_bytes(kItems, {.zip64 = true, .data_descriptor = true})), expected());
}

TEST(PytorchZip, AcceptsAnEndRecordComment) {
  std::string bytes = zip_bytes(kItems);
  set_le(bytes, bytes.size() - 2, 5, 2);
  EXPECT_EQ(entries_of(bytes + "hello"), expected());
}

TEST(PytorchZip, ReadChecksTheCrc) {
  std::string bytes = zip_bytes(kItems);
  bytes[30 + 12] ^= 1;  // first byte of data.pkl's data (local header 30 bytes + 12-byte name)
  TempDir dir;
  write_bytes(dir.file("a.zip"), bytes);
  const File file(dir.file("a.zip"));
  const ZipArchive zip(file);
  expect_contains(expect_error(ErrorCode::ZipInvalid, [&] { zip.read(*zip.find("top/data.pkl")); }), "CRC-32");
  EXPECT_EQ(zip.read(*zip.find("top/version")), "3\n");
}

TEST(PytorchZip, RefusesCompressedAndEncryptedEntries) {
  TempDir dir;
  std::string bytes = zip_bytes({{"top/data.pkl", "x", 8}, {"top/key", "y"}});
  write_bytes(dir.file("a.zip"), bytes);
  const File file(dir.file("a.zip"));
  const ZipArchive zip(file);
  expect_contains(expect_error(ErrorCode::ZipEntryCompressed, [&] { zip.stored(*zip.find("top/data.pkl")); }),
                  "deflate");
  pytorch::ZipEntry encrypted = *zip.find("top/key");
  encrypted.flags |= 1;
  expect_contains(expect_error(ErrorCode::ZipEntryCompressed, [&] { zip.stored(encrypted); }), "encrypted");
}

// Offsets into a non-ZIP64 archive built from kItems.
size_t eocd_of(const std::string& b) { return b.size() - 22; }
size_t cd_of(const std::string& b) { return get_le(b, eocd_of(b) + 16, 4); }

TEST(PytorchZip, RejectsWhatIsNotAZip) {
  expect_contains(zip_error(ErrorCode::ZipInvalid, "PK\x03\x04 short"), "too small");
  expect_contains(zip_error(ErrorCode::ZipInvalid, std::string(100, 'z')), "no end-of-central-directory");
  expect_contains(zip_error(ErrorCode::ZipInvalid, zip_bytes(kItems) + "trailing"), "no end-of-central-directory");
}

TEST(PytorchZip, RejectsABadEndRecord) {
  std::string b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 12, cd_of(b), 4);  // directory size: runs into the end record
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "runs past its end record");
  b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 16, 0xfffffff0, 4);  // directory offset far beyond the file
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "runs past its end record");
  b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 8, 2, 2);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "on this disk");
  b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 4, 1, 2);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "multi-disk");
  b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 8, 60000, 2), set_le(b, eocd_of(b) + 10, 60000, 2);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "cannot fit");
  b = zip_bytes(kItems);
  set_le(b, eocd_of(b) + 8, 2, 2), set_le(b, eocd_of(b) + 10, 2, 2);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "fill only");
}

TEST(PytorchZip, RejectsABadCentralDirectory) {
  std::string b = zip_bytes(kItems);
  b[cd_of(b)] = 'X';
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "bad signature");
  b = zip_bytes(kItems);
  set_le(b, cd_of(b) + 28, 200, 2);  // name length beyond the directory
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "runs past the directory");
  b = zip_bytes(kItems);
  set_le(b, cd_of(b) + 20, 11, 4);  // stored, but the two sizes differ
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "sizes differ");
  b = zip_bytes(kItems);
  set_le(b, cd_of(b) + 20, 0xffffffff, 4);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "no ZIP64 extra field");
  expect_contains(zip_error(ErrorCode::ZipInvalid, zip_bytes({{"a", "1"}, {"a", "2"}})), "appears twice");
}

TEST(PytorchZip, RejectsALocalHeaderThatDisagrees) {
  std::string b = zip_bytes(kItems);
  b[30] = 'X';  // first letter of the local name
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "names another entry");
  b = zip_bytes(kItems);
  b[0] = 'X';
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "no local header");
  b = zip_bytes(kItems);
  set_le(b, 18, 13, 4), set_le(b, 22, 13, 4);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "local header sizes");
  b = zip_bytes(kItems);
  set_le(b, 8, 8, 2);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "compression method");
  b = zip_bytes(kItems);
  set_le(b, cd_of(b) + 42, cd_of(b) - 10, 4);  // local header offset inside the directory's reach
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "lies past the central directory");
}

TEST(PytorchZip, RejectsEntryDataPastTheDirectory) {
  std::string b = zip_bytes(kItems);
  const size_t second = cd_of(b) + 46 + kItems[0].name.size();  // the data/0 entry's central header
  set_le(b, second + 20, 5000, 4), set_le(b, second + 24, 5000, 4);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "run past the central directory");
  b = zip_bytes(kItems);
  set_le(b, second + 20, 0xfffffffe, 4), set_le(b, second + 24, 0xfffffffe, 4);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "run past the central directory");
}

TEST(PytorchZip, RejectsBadZip64Records) {
  const std::string good = zip_bytes(kItems, {.zip64 = true, .data_descriptor = false});
  const size_t locator = good.size() - 22 - 20, eocd64 = locator - 56;
  std::string b = good;
  set_le(b, locator + 8, eocd64 + 1, 8);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "ZIP64 end record");
  b = good;
  set_le(b, locator + 8, uint64_t{1} << 62, 8);
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "overlaps its locator");
  b = good;
  set_le(b, eocd64 + 40, 1, 8);  // directory size
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "cannot fit");
  b = good;
  set_le(b, b.size() - 22 + 10, 2, 2), set_le(b, b.size() - 22 + 8, 2, 2);  // a 32-bit count that disagrees
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "disagrees");
  b = good;
  set_le(b, 0 + 30 + kItems[0].name.size() + 2, 8, 2);  // local ZIP64 block too short for its two sizes
  expect_contains(zip_error(ErrorCode::ZipInvalid, b), "lacks a field");
}

}  // namespace
}  // namespace wl::test
