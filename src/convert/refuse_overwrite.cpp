#include "convert/refuse_overwrite.hpp"

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
  for (const TensorInfo& t : source.tensors()) inputs.insert(source.file_of(t));
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

}  // namespace wl
