#include <bit>
#include <filesystem>
#include <unordered_set>

#include "core/atomic_output.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"

namespace wl {
namespace {

static_assert(std::endian::native == std::endian::little, "model.bin is written straight from memory");

// A name meta.txt can hold: non-empty, one line, and a single ':' separator after it.
void check_name(const std::string& name, std::unordered_set<std::string>& seen, const std::string& dir) {
  if (name.empty()) throw Error(ErrorCode::InvalidArgument, "empty tensor name cannot be written to meta.txt", dir);
  if (name.find_first_of(":\n\r") != std::string::npos)
    throw Error(ErrorCode::InvalidArgument, "a tensor name in meta.txt cannot contain ':', '\\n' or '\\r'", dir, name);
  if (!seen.insert(name).second)
    throw Error(ErrorCode::InvalidArgument, "tensor name given twice", dir, name);
}

std::string meta_line(const std::string& name, const Shape& shape) {
  std::string line = name;
  line += ':';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) line += ',';
    line += std::to_string(shape[i]);
  }
  line += '\n';
  return line;
}

}  // namespace

void write_custom_binary(const std::string& dir, const std::vector<std::pair<std::string, TensorView>>& tensors) {
  std::unordered_set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    check_name(name, seen, dir);
    if (!tensor.defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", dir, name);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot create directory: " + ec.message(), dir);

  const std::filesystem::path root(dir);
  AtomicFileWriter bin((root / "model.bin").string());
  AtomicFileWriter meta((root / "meta.txt").string());
  for (const auto& [name, tensor] : tensors) {
    if (tensor.dtype() == DType::F32 && tensor.is_contiguous()) {
      bin.write(tensor.raw(), tensor.nbytes());
    } else {
      const TensorView f32 = tensor.to(DType::F32);
      bin.write(f32.raw(), f32.nbytes());
    }
    const std::string line = meta_line(name, tensor.shape());
    meta.write(line.data(), line.size());
  }
  // model.bin first: a crash between the two commits leaves the old meta.txt, whose sizes then
  // (almost always) disagree with the new model.bin, which the reader reports.
  bin.commit();
  meta.commit();
}

}  // namespace wl
