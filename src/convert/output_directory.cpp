#include "convert/output_directory.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

struct Identity {
  std::string real;  // realpath, when the file exists
  dev_t dev = 0;
  ino_t ino = 0;
  bool exists = false;
};

Identity identity_of(const std::string& path) {
  Identity id;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return id;
  id.exists = true;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  std::error_code ec;
  id.real = fs::weakly_canonical(path, ec).string();
  return id;
}

bool same_file(const Identity& a, const Identity& b) {
  return a.exists && b.exists && ((a.dev == b.dev && a.ino == b.ino) || a.real == b.real);
}

}  // namespace

void refuse_overwriting_input(const WeightSource& source, const std::string& out,
                              const std::vector<std::string>& out_files) {
  std::set<std::string> inputs{source.origin()};
  for (const TensorInfo& t : source.tensors()) inputs.insert(t.file);
  std::vector<std::string> outputs{out};
  for (const std::string& f : out_files) outputs.push_back((fs::path(out) / f).string());
  for (const std::string& input : inputs) {
    const Identity in = identity_of(input);  // not a local file (a URL, memory): nothing to overwrite
    for (const std::string& output : outputs)
      if (same_file(in, identity_of(output)))
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("the output {} is the input {}: write the conversion somewhere else", output, input),
                    out);
  }
}

OutputDirectory::OutputDirectory(std::string final_path) : final_path_(std::move(final_path)) {
  while (final_path_.size() > 1 && final_path_.ends_with('/')) final_path_.pop_back();
  std::string pattern = final_path_ + ".tmp-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw Error(ErrorCode::Io, fmt::format("cannot create a temporary directory: {}", std::strerror(errno)), pattern);
  tmp_path_ = pattern;
}

OutputDirectory::~OutputDirectory() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_path_, ec);
}

std::string OutputDirectory::file(const std::string& name) const { return (fs::path(tmp_path_) / name).string(); }

void OutputDirectory::commit(const std::vector<std::string>& last) {
  ::chmod(tmp_path_.c_str(), 0755);  // mkdtemp made it 0700; a directory that others may read
  if (::rename(tmp_path_.c_str(), final_path_.c_str()) == 0) {  // new, or an empty directory
    committed_ = true;
    return;
  }
  if (errno != ENOTEMPTY && errno != EEXIST)
    throw Error(ErrorCode::Io, fmt::format("cannot rename {} into place: {}", tmp_path_, std::strerror(errno)),
                final_path_);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmp_path_)) names.push_back(entry.path().filename().string());
  std::stable_partition(names.begin(), names.end(),
                        [&](const std::string& n) { return std::find(last.begin(), last.end(), n) == last.end(); });
  for (const std::string& name : names) {
    const std::string to = (fs::path(final_path_) / name).string();
    if (::rename(file(name).c_str(), to.c_str()) != 0)
      throw Error(ErrorCode::Io, fmt::format("cannot move {} into place: {}", name, std::strerror(errno)), to);
  }
  std::error_code ec;
  fs::remove(tmp_path_, ec);
  committed_ = true;
}

}  // namespace wl
