// The one seam for output that appears complete or not at all: a file or a directory written under
// a temporary name beside its final one and renamed into place on commit(); removed if commit() is
// never reached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wl {

// Writes a file atomically: bytes go to `path.tmp-XXXX`, which is renamed over `path` on commit();
// if the writer dies without commit(), the temporary file is removed and `path` is untouched.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t length);
  uint64_t written() const noexcept { return written_; }
  void commit();  // fsync + rename

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// A directory assembled under a temporary name beside `final_path` (`final_path.tmp-XXXXXX`) and
// renamed into place by commit(); removed, with everything in it, if commit() is never reached.
// Into an existing non-empty directory the files are moved one by one (each rename atomic).
class AtomicDirectory {
 public:
  explicit AtomicDirectory(std::string final_path);
  ~AtomicDirectory();
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  const std::string& path() const noexcept { return tmp_path_; }  // write the files here
  std::string file(const std::string& name) const;
  // Moves the files into place, `last` (e.g. an index that names the others) after the rest.
  void commit(const std::vector<std::string>& last = {});

 private:
  std::string final_path_;
  std::string tmp_path_;
  bool committed_ = false;
};

}  // namespace wl
