// A complete user-defined loader in one file: a parser for the .npy format, a WeightLoader that
// turns a directory of .npy files into a catalogue, and its registration under "npy_dir".
// It uses only the public API (include/weightloader/).
#include "npy_dir_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "weightloader/error.hpp"
#include "weightloader/registry.hpp"

namespace npy_example {
namespace {

namespace fs = std::filesystem;
using wl::Error;
using wl::ErrorCode;

// The dtypes numpy writes for little-endian and byte-sized arrays.
std::optional<wl::DType> dtype_for_descr(std::string_view descr) {
  static const std::map<std::string_view, wl::DType> table = {
      {"<f2", wl::DType::F16}, {"<f4", wl::DType::F32}, {"<f8", wl::DType::F64}, {"|i1", wl::DType::I8},
      {"<i1", wl::DType::I8},  {"<i2", wl::DType::I16}, {"<i4", wl::DType::I32}, {"<i8", wl::DType::I64},
      {"|u1", wl::DType::U8},  {"<u1", wl::DType::U8},  {"<u2", wl::DType::U16}, {"<u4", wl::DType::U32},
      {"<u8", wl::DType::U64}, {"|b1", wl::DType::BOOL},
  };
  const auto it = table.find(descr);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

[[noreturn]] void unsupported_descr(const std::string& descr, const std::string& path) {
  if (descr.size() > 1 && descr[1] == 'O')
    throw Error(ErrorCode::UnsupportedDType,
                "dtype '" + descr + "' holds pickled Python objects; only numeric arrays can be loaded", path);
  if (!descr.empty() && descr[0] == '>')
    throw Error(ErrorCode::UnsupportedDType,
                "dtype '" + descr + "' is big-endian; save it little-endian (arr.astype(arr.dtype.newbyteorder('<')))",
                path);
  throw Error(ErrorCode::UnsupportedDType,
              "dtype '" + descr + "' is not supported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)",
              path);
}

// A parser for the Python dict literal numpy writes as the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader header;
    std::optional<std::string> descr;
    bool has_order = false, has_shape = false;
    expect('{');
    while (!consume('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        if (peek() == '[') fail("structured dtypes (a list as 'descr') are not supported");
        descr = string();
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        header.shape = tuple();
        has_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("text after the closing '}'");
    if (!descr || !has_order || !has_shape) fail("the header needs 'descr', 'fortran_order' and 'shape'");
    const std::optional<wl::DType> dtype = dtype_for_descr(*descr);
    if (!dtype) unsupported_descr(*descr, path_);
    header.dtype = *dtype;
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::InvalidHeaderDeserialization,
                "bad .npy header at character " + std::to_string(pos_) + ": " + what + " in \"" +
                    std::string(text_) + "\"",
                path_);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const size_t end = text_.find(quote, ++pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(text_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  // (), (3,), (2, 3): non-negative integers; Python 2 writes longs as 3L.
  wl::Shape tuple() {
    wl::Shape shape;
    expect('(');
    while (!consume(')')) {
      skip_space();
      const size_t start = pos_;
      uint64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const uint64_t digit = uint64_t(text_[pos_++] - '0');
        if (value > (UINT64_MAX - digit) / 10) fail("dimension overflows u64");
        value = value * 10 + digit;
      }
      if (pos_ == start) fail("expected a non-negative integer dimension");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      shape.push_back(value);
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint32_t little_endian(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = count; i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

// Column-major element strides for a Fortran-order array; empty (row-major) where both agree.
std::vector<int64_t> fortran_strides(const wl::Shape& shape) {
  size_t non_trivial = 0;
  for (uint64_t d : shape) non_trivial += d > 1;
  if (non_trivial < 2) return {};
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    strides[i] = stride;
    stride *= int64_t(shape[i]);
  }
  return strides;
}

// `layers/0/w.npy` below the root -> `layers.0.w`.
std::string tensor_name(const fs::path& relative) {
  std::string name;
  for (const fs::path& part : relative.parent_path()) name += part.string() + ".";
  return name + relative.stem().string();
}

class NpyDirLoader : public wl::WeightLoader {
 public:
  std::unique_ptr<wl::WeightSource> get_weights(const std::string& path, const wl::LoadOptions&) const override {
    wl::Catalogue catalogue = read_npy_dir(path);
    return std::make_unique<wl::WeightSource>("npy_dir", path, std::move(catalogue));
  }
};

}  // namespace

void register_npy_dir_loader(wl::WeightLoaderRegistry& registry) {
  registry.register_loader(
      "npy_dir", wl::LoaderSpec{"A directory of NumPy .npy files, one tensor per file; layers/0/w.npy is layers.0.w "
                                "(example: examples/npy_dir_loader.cpp).",
                                {},
                                [](const wl::Kwargs&) { return std::make_unique<NpyDirLoader>(); }});
}

NpyHeader read_npy_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::FileNotFound, "cannot open .npy file", path);
  std::error_code ec;
  const uint64_t file_size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorCode::Io, "cannot read size: " + ec.message(), path);

  // Magic, version, header length: 10 bytes in version 1.0, 12 in 2.0 and 3.0.
  unsigned char preamble[12] = {};
  in.read(reinterpret_cast<char*>(preamble), 10);
  if (in.gcount() != 10) throw Error(ErrorCode::Truncated, "file is shorter than a .npy preamble", path);
  if (std::string_view(reinterpret_cast<char*>(preamble), 6) != "\x93NUMPY")
    throw Error(ErrorCode::InvalidHeaderDeserialization, "not a .npy file (no \\x93NUMPY magic)", path);
  const unsigned major = preamble[6], minor = preamble[7];
  if (minor != 0 || major < 1 || major > 3)
    throw Error(ErrorCode::InvalidHeaderDeserialization,
                "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (1.0, 2.0 and 3.0 are supported)",
                path);
  size_t header_start = 10;
  uint64_t header_len = little_endian(preamble + 8, 2);
  if (major >= 2) {
    in.read(reinterpret_cast<char*>(preamble + 10), 2);
    if (in.gcount() != 2) throw Error(ErrorCode::Truncated, "file is shorter than a .npy preamble", path);
    header_start = 12;
    header_len = little_endian(preamble + 8, 4);
  }
  if (header_start + header_len > file_size)
    throw Error(ErrorCode::Truncated,
                "header of " + std::to_string(header_len) + " bytes runs past the end of the file (" +
                    std::to_string(file_size) + " bytes)",
                path);
  std::string text(header_len, '\0');
  in.read(text.data(), std::streamsize(header_len));
  if (uint64_t(in.gcount()) != header_len) throw Error(ErrorCode::Io, "short read of the header", path);

  NpyHeader header = HeaderParser(text, path).parse();
  header.data_offset = header_start + header_len;
  const uint64_t itemsize = wl::dtype_size(header.dtype);
  const uint64_t numel = wl::shape_numel(header.shape);
  if (numel > UINT64_MAX / itemsize)
    throw Error(ErrorCode::ValidationOverflow, "byte size of shape " + wl::shape_to_string(header.shape) + " overflows u64",
                path);
  const uint64_t data_bytes = file_size - header.data_offset;
  if (data_bytes != numel * itemsize)
    throw Error(data_bytes < numel * itemsize ? ErrorCode::Truncated : ErrorCode::MetadataIncompleteBuffer,
                "shape " + wl::shape_to_string(header.shape) + " of " + std::string(wl::dtype_name(header.dtype)) +
                    " needs " + std::to_string(numel * itemsize) + " data bytes but the file has " +
                    std::to_string(data_bytes),
                path);
  return header;
}

wl::Catalogue read_npy_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(fs::exists(dir, ec) ? ErrorCode::InvalidArgument : ErrorCode::FileNotFound,
                "npy_dir expects a directory of .npy files", dir);
  std::map<std::string, std::string> files;  // tensor name -> file, sorted by name
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".npy") continue;
    const std::string name = tensor_name(fs::relative(entry.path(), dir));
    const auto [it, inserted] = files.emplace(name, entry.path().string());
    if (!inserted)
      throw Error(ErrorCode::DuplicateTensorName, "both " + it->second + " and " + entry.path().string() + " give this name",
                  dir, name);
  }
  if (files.empty()) throw Error(ErrorCode::NoMatchingFiles, "no .npy files in the directory", dir);

  wl::Catalogue catalogue;
  for (const auto& [name, path] : files) {
    const NpyHeader header = read_npy_header(path);
    wl::TensorInfo info;
    info.name = name;
    info.dtype = header.dtype;
    info.shape = header.shape;
    info.source = catalogue.add_file(path);
    info.offset = header.data_offset;
    info.nbytes = wl::shape_numel(header.shape) * wl::dtype_size(header.dtype);
    if (header.fortran_order) info.strides = fortran_strides(header.shape);
    catalogue.tensors.push_back(std::move(info));
  }
  return catalogue;
}

}  // namespace npy_example
