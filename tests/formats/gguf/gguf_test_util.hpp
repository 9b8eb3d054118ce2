// Helpers for the GGUF tests: GGUF bytes made by hand, field by field, and reading values back.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/source.hpp"

namespace wl::test {

// Appends GGUF fields in the file's little-endian encoding; corrupt files are made by writing
// the wrong field on purpose.
class GgufBytes {
 public:
  template <typename T>
  GgufBytes& le(T value) {
    char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));  // the tests run on little-endian machines, as the library does
    bytes_.append(b, sizeof(T));
    return *this;
  }
  GgufBytes& raw(std::string_view s) {
    bytes_.append(s);
    return *this;
  }
  GgufBytes& str(std::string_view s) { return le<uint64_t>(s.size()).raw(s); }
  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF").le<uint32_t>(version).le<uint64_t>(n_tensors).le<uint64_t>(n_kv);
  }
  // A key and its value type; the value follows with le() / str().
  GgufBytes& key(std::string_view k, uint32_t type) { return str(k).le<uint32_t>(type); }
  GgufBytes& kv_u32(std::string_view k, uint32_t v) { return key(k, 4).le<uint32_t>(v); }
  GgufBytes& kv_str(std::string_view k, std::string_view v) { return key(k, 8).str(v); }
  // A tensor info; `ne` in GGUF order (ne[0] fastest).
  GgufBytes& tensor(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    str(name).le<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) le<uint64_t>(d);
    return le<uint32_t>(type).le<uint64_t>(offset);
  }
  GgufBytes& pad(uint64_t alignment = 32) {
    bytes_.append((alignment - bytes_.size() % alignment) % alignment, '\0');
    return *this;
  }
  size_t size() const noexcept { return bytes_.size(); }
  const std::string& str() const noexcept { return bytes_; }

 private:
  std::string bytes_;
};

inline std::string make_gguf(const TempDir& dir, const GgufBytes& bytes, const std::string& name = "model.gguf") {
  const std::string path = dir.file(name);
  write_bytes(path, bytes.str());
  return path;
}

inline void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "\"" << part << "\" not in: " << message;
}

// An F32 tensor of `shape` with values uniform in [-bound, bound), the same for the same seed.
inline TensorView seeded_f32(Shape shape, uint32_t seed, float bound) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

inline std::vector<float> values_of(const TensorView& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

// A tensor's values as `T`, read through the generic WeightSource (decoders and row orders applied).
template <typename T>
std::vector<T> gguf_values(const Catalogue& catalogue, const std::string& name, DType as) {
  const WeightSource source("gguf", "test", catalogue);
  const TensorInfo& info = source.at(name);
  std::vector<T> out(info.numel());
  source.read(info, as, out.data());
  return out;
}

}  // namespace wl::test
