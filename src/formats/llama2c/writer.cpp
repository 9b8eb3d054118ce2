// Writing Hugging Face Llama tensors as a llama2.c checkpoint (v0, v1 or v2).
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/atomic_output.hpp"
#include "formats/llama2c/header.hpp"
#include "formats/llama2c/layout.hpp"
#include "formats/llama2c/q8.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// v0's rotary table [seq_len, head_size / 2], computed in float32 as llama2.c's model.py does.
std::vector<float> rope_table(const Llama2cHeader& h, bool sine) {
  const uint64_t half = h.head_size() / 2;
  std::vector<float> table(h.seq_len * half);
  for (uint64_t j = 0; j < half; ++j) {
    const float freq = 1.0f / std::pow(10000.0f, static_cast<float>(2 * j) / static_cast<float>(h.head_size()));
    for (uint64_t pos = 0; pos < h.seq_len; ++pos) {
      const float angle = static_cast<float>(pos) * freq;
      table[pos * half + j] = sine ? std::sin(angle) : std::cos(angle);
    }
  }
  return table;
}

// The tensor's float32 values in stored order: q/k rows go back to the interleaved layout.
TensorView stored_values(const TensorView& tensor, const llama2c::Entry& e, const Llama2cHeader& h) {
  TensorView f32 = tensor.dtype() == DType::F32 && tensor.is_contiguous() ? tensor : tensor.to(DType::F32);
  if (e.rotary_heads == 0) return f32;
  TensorView out = TensorView::empty(DType::F32, f32.shape());
  const uint64_t row_bytes = f32.nbytes() / f32.shape()[0];
  const std::vector<uint64_t> order = llama2c::hf_row_order(e.rotary_heads, h.head_size());
  for (uint64_t i = 0; i < order.size(); ++i)
    std::memcpy(out.raw() + order[i] * row_bytes, f32.raw() + i * row_bytes, row_bytes);
  return out;
}

void write_entry(AtomicFileWriter& out, const llama2c::Entry& e, const TensorView* tensor, const Llama2cHeader& h,
                 const std::string& path) {
  if (e.stored == llama2c::Stored::RopeCos || e.stored == llama2c::Stored::RopeSin) {
    const std::vector<float> table = rope_table(h, e.stored == llama2c::Stored::RopeSin);
    out.write(table.data(), table.size() * sizeof(float));
    return;
  }
  const TensorView values = stored_values(*tensor, e, h);
  if (e.stored == llama2c::Stored::F32) {
    out.write(values.raw(), values.nbytes());
    return;
  }
  const uint64_t n = values.numel();
  std::vector<int8_t> q(n);
  std::vector<float> scales(n / h.group_size);
  llama2c::quantise_q8(values.data<float>(), n, h.group_size, q.data(), scales.data(), path, e.name);
  out.write(q.data(), q.size());
  out.write(scales.data(), scales.size() * sizeof(float));
}

}  // namespace

void write_llama2c(const std::string& path, const Llama2cHeader& header,
                   const std::vector<std::pair<std::string, TensorView>>& tensors) {
  llama2c::validate(header, path);
  std::unordered_map<std::string, const TensorView*> by_name;
  for (const auto& [name, tensor] : tensors)
    if (!by_name.emplace(name, &tensor).second)
      throw Error(ErrorCode::DuplicateTensorName, "tensor given twice", path, name);

  const std::vector<llama2c::Entry> entries = llama2c::layout(header);
  std::unordered_set<std::string> wanted;
  for (const llama2c::Entry& e : entries) {
    if (e.name.empty()) continue;
    wanted.insert(e.name);
    const auto it = by_name.find(e.name);
    if (it == by_name.end())
      throw Error(ErrorCode::TensorNotFound,
                  fmt::format("a llama2.c checkpoint with header ({}) needs this tensor", llama2c::describe(header)),
                  path, e.name);
    if (!it->second->defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", path, e.name);
    if (it->second->shape() != e.shape)
      throw Error(ErrorCode::ShapeMismatch,
                  fmt::format("shape {} differs from the header's {}", shape_to_string(it->second->shape()),
                              shape_to_string(e.shape)),
                  path, e.name);
  }
  for (const auto& [name, tensor] : tensors)
    if (!wanted.contains(name))
      throw Error(ErrorCode::InvalidArgument,
                  name == "lm_head.weight"
                      ? std::string("the header says the classifier is shared with the token embedding")
                      : std::string("a llama2.c checkpoint has no place for this tensor"),
                  path, name);

  AtomicFileWriter out(path);
  const std::vector<std::byte> head = llama2c::encode_header(header);
  out.write(head.data(), head.size());
  for (const llama2c::Entry& e : entries)
    write_entry(out, e, e.name.empty() ? nullptr : by_name.at(e.name), header, path);
  out.commit();
}

}  // namespace wl
