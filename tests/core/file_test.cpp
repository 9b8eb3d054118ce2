// File's private copy-on-write mapping: writable, private to its holder, alive after the File
// and the file's name are gone.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/file.hpp"
#include "test_util.hpp"
#include "weightloader/tensor.hpp"

namespace wl {
namespace {

TEST(File, PrivateCopyTakesWritesThatNeverReachTheFileNorAnotherCopy) {
  test::TempDir dir;
  const std::string path = dir.file("f.bin");
  test::write_bytes(path, "abcdef");
  const File file(path);
  const std::shared_ptr<Storage> a = file.private_copy(), b = file.private_copy();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->writable());
  EXPECT_EQ(a->size(), 6u);
  a->data()[0] = std::byte{'X'};
  EXPECT_EQ(std::memcmp(a->data(), "Xbcdef", 6), 0);
  EXPECT_EQ(std::memcmp(b->data(), "abcdef", 6), 0);
  EXPECT_EQ(test::read_bytes(path), "abcdef");
  EXPECT_EQ(std::memcmp(file.mapping(), "abcdef", 6), 0);
}

TEST(File, PrivateCopyOutlivesTheFileAndItsName) {
  test::TempDir dir;
  const std::string path = dir.file("f.bin");
  test::write_bytes(path, "hello");
  std::shared_ptr<Storage> copy = std::make_unique<File>(path)->private_copy();
  std::filesystem::remove(path);
  ASSERT_TRUE(copy);
  EXPECT_EQ(std::memcmp(copy->data(), "hello", 5), 0);
  EXPECT_NE(copy->describe().find("f.bin"), std::string::npos) << copy->describe();
}

TEST(File, AnEmptyFileHasNoPrivateCopy) {
  test::TempDir dir;
  test::write_bytes(dir.file("empty"), "");
  EXPECT_EQ(File(dir.file("empty")).private_copy(), nullptr);
}

}  // namespace
}  // namespace wl
