// Where a conversion writes: never over its input, and a directory that appears complete or not at all.
#pragma once

#include <string>

#include "weightloader/source.hpp"

namespace wl {

// InvalidArgument when `out` (or, for a directory, any of `out_files` inside it) is the source's
// origin or one of the files its tensors come from: the same path, or the same inode.
void refuse_overwriting_input(const WeightSource& source, const std::string& out,
                              const std::vector<std::string>& out_files = {});

// A directory assembled under a temporary name beside `final_path` (`final_path.tmp-XXXXXX`) and
// renamed into place by commit(); removed, with everything in it, if commit() is never reached.
// Into an existing non-empty directory the files are moved one by one (each rename atomic).
class OutputDirectory {
 public:
  explicit OutputDirectory(std::string final_path);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

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
