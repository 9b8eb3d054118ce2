#include "core/atomic_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace fs = std::filesystem;

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  std::random_device rd;
  tmp_path_ = fmt::format("{}.tmp-{:08x}", path_, rd());
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_errno("cannot create", tmp_path_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

void AtomicFileWriter::write(const void* data, size_t length) {
  const auto* in = static_cast<const char*>(data);
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::write(fd_, in + done, std::min<size_t>(length - done, 1u << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write failed", tmp_path_);
    }
    done += static_cast<size_t>(n);
  }
  written_ += length;
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) throw_errno("fsync failed", tmp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    throw_errno("close failed", tmp_path_);
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp_path_.c_str());
    throw_errno("cannot rename temporary file into place", path_);
  }
}

AtomicDirectory::AtomicDirectory(std::string final_path) : final_path_(std::move(final_path)) {
  while (final_path_.size() > 1 && final_path_.ends_with('/')) final_path_.pop_back();
  std::string pattern = final_path_ + ".tmp-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw_errno("cannot create a temporary directory", pattern);
  tmp_path_ = pattern;
}

AtomicDirectory::~AtomicDirectory() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_path_, ec);
}

std::string AtomicDirectory::file(const std::string& name) const { return (fs::path(tmp_path_) / name).string(); }

void AtomicDirectory::commit(const std::vector<std::string>& last) {
  ::chmod(tmp_path_.c_str(), 0755);  // mkdtemp made it 0700; a directory that others may read
  if (::rename(tmp_path_.c_str(), final_path_.c_str()) == 0) {  // new, or an empty directory
    committed_ = true;
    return;
  }
  if (errno != ENOTEMPTY && errno != EEXIST)
    throw_errno(fmt::format("cannot rename {} into place", tmp_path_), final_path_);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmp_path_)) names.push_back(entry.path().filename().string());
  std::stable_partition(names.begin(), names.end(),
                        [&](const std::string& n) { return std::find(last.begin(), last.end(), n) == last.end(); });
  for (const std::string& name : names) {
    const std::string to = (fs::path(final_path_) / name).string();
    if (::rename(file(name).c_str(), to.c_str()) != 0)
      throw_errno(fmt::format("cannot move {} into place", name), to);
  }
  std::error_code ec;
  fs::remove(tmp_path_, ec);
  committed_ = true;
}

}  // namespace wl
