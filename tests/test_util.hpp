// Shared helpers for the C++ tests: temporary directories, the shared test data, error checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "weightloader/error.hpp"

namespace wl::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("wl-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// ../shared/testdata, or skip the test with a clear message when the folder is truly absent.
inline fs::path testdata_dir() { return fs::path(WL_TESTDATA_DIR); }
#define WL_REQUIRE_TESTDATA()                                                                      \
  do {                                                                                             \
    if (!std::filesystem::is_directory(::wl::test::testdata_dir()))                                \
      GTEST_SKIP() << "shared test data not found at " << ::wl::test::testdata_dir()               \
                   << " (expected ../shared/testdata next to the repository)";                     \
  } while (0)

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `fn`, expecting a wl::Error with `code`; returns its message for further checks.
template <typename Fn>
std::string expect_error(ErrorCode code, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(error_code_name(e.code()), error_code_name(code)) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected wl::Error " << error_code_name(code) << ", got std::exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected wl::Error " << error_code_name(code) << ", but nothing was thrown";
  return {};
}

}  // namespace wl::test
