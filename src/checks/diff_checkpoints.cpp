#include "weightloader/diff_checkpoints.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checks/tensor_stream.hpp"
#include "weightloader/checkpoint_names.hpp"

namespace wl {

namespace {

bool is_wide(DType d) { return dtype_size(d) == 8; }

// What a run of values contributes to a TensorDiff.
struct Partial {
  bool equal_bits = true;
  double max_abs = 0.0, max_rel = 0.0;
  uint64_t beyond = 0;

  void merge(const Partial& p) {
    equal_bits = equal_bits && p.equal_bits;
    max_abs = std::max(max_abs, p.max_abs);
    max_rel = std::max(max_rel, p.max_rel);
    beyond += p.beyond;
  }
};

template <typename T>
Partial compare(const T* a, const T* b, uint64_t n, double atol, double rtol) {
  Partial p;
  p.equal_bits = std::memcmp(a, b, n * sizeof(T)) == 0;
  if (p.equal_bits) return p;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (std::isnan(x) || std::isnan(y)) {
      p.beyond += std::isnan(x) != std::isnan(y);
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      p.beyond += x != y;
      continue;
    }
    const double d = std::fabs(x - y);
    p.max_abs = std::max(p.max_abs, d);
    if (y != 0) p.max_rel = std::max(p.max_rel, d / std::fabs(y));
    p.beyond += d > atol + rtol * std::fabs(y);
  }
  return p;
}

Partial compare_piece(const StreamPiece& piece, double atol, double rtol) {
  return piece.dtype == DType::F64 ? compare(static_cast<const double*>(piece.data[0]),
                                       static_cast<const double*>(piece.data[1]), piece.count, atol, rtol)
                             : compare(static_cast<const float*>(piece.data[0]),
                                       static_cast<const float*>(piece.data[1]), piece.count, atol, rtol);
}

}  // namespace

bool DiffReport::matches() const {
  if (!only_in_a.empty() || !only_in_b.empty()) return false;
  for (const TensorDiff& t : tensors)
    if (!t.matches()) return false;
  return true;
}

DiffReport diff_checkpoints(const WeightSource& a_in, const WeightSource& b_in, const DiffOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const auto a = with_normalised_names(a_in), b = with_normalised_names(b_in);
  DiffReport report;
  report.a = a->origin();
  report.b = b->origin();
  report.atol = o.atol;
  report.rtol = o.rtol;
  std::vector<StreamGroup> groups;
  std::vector<size_t> diff_of;  // the TensorDiff of each group
  for (const TensorInfo& t : a->tensors()) {
    const TensorInfo* u = b->find(t.name);
    if (!u) {
      report.only_in_a.push_back(t.name);
      continue;
    }
    TensorDiff d;
    d.name = t.name;
    d.dtype_a = t.stored_type();
    d.dtype_b = u->stored_type();
    d.shape_a = t.shape;
    d.shape_b = u->shape;
    d.elements = t.numel();
    d.equal_bits = !d.dtype_differs() && !d.shape_differs();
    if (!d.shape_differs()) {  // values are compared only between tensors of one shape
      const DType as = is_wide(t.dtype) || is_wide(u->dtype) ? DType::F64 : DType::F32;
      groups.push_back({{{a.get(), &t}, {b.get(), u}}, as});
      diff_of.push_back(report.tensors.size());
    }
    report.tensors.push_back(std::move(d));
  }
  for (const TensorInfo& u : b->tensors())
    if (!a->find(u.name)) report.only_in_b.push_back(u.name);

  StreamOptions so;
  so.window_bytes = o.window_bytes;
  so.io = o.io;
  std::vector<Partial> partials(groups.size());
  report.bytes_read = stream_tensors(groups, so, [&](const StreamPiece& piece) {
    partials[piece.group].merge(compare_piece(piece, o.atol, o.rtol));
  });
  for (size_t g = 0; g < partials.size(); ++g) {
    TensorDiff& d = report.tensors[diff_of[g]];
    d.equal_bits = d.equal_bits && partials[g].equal_bits;
    d.max_abs_diff = partials[g].max_abs;
    d.max_rel_diff = partials[g].max_rel;
    d.beyond_tolerance = partials[g].beyond;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string DiffReport::to_json() const {
  nlohmann::ordered_json j;
  j["a"] = a;
  j["b"] = b;
  j["atol"] = atol;
  j["rtol"] = rtol;
  j["matches"] = matches();
  j["tensors"] = nlohmann::ordered_json::array();
  uint64_t equal = 0, within = 0, differing = 0, shape = 0, dtype = 0;
  for (const TensorDiff& t : tensors) {
    j["tensors"].push_back({{"name", t.name},
                            {"dtype_a", t.dtype_a},
                            {"dtype_b", t.dtype_b},
                            {"shape_a", t.shape_a},
                            {"shape_b", t.shape_b},
                            {"elements", t.elements},
                            {"equal_bits", t.equal_bits},
                            {"max_abs_diff", t.max_abs_diff},
                            {"max_rel_diff", t.max_rel_diff},
                            {"beyond_tolerance", t.beyond_tolerance},
                            {"matches", t.matches()}});
    equal += t.equal_bits;
    within += t.matches() && !t.equal_bits;
    differing += !t.matches();
    shape += t.shape_differs();
    dtype += t.dtype_differs();
  }
  j["only_in_a"] = only_in_a;
  j["only_in_b"] = only_in_b;
  j["summary"] = {{"compared", tensors.size()},   {"equal_bits", equal},         {"within_tolerance", within},
                  {"differing", differing},       {"shape_differs", shape},      {"dtype_differs", dtype},
                  {"only_in_a", only_in_a.size()}, {"only_in_b", only_in_b.size()}, {"bytes_read", bytes_read},
                  {"seconds", seconds}};
  return j.dump(2);
}

std::string DiffReport::to_string(bool verbose) const {
  std::string out;
  size_t width = 4;
  for (const TensorDiff& t : tensors) width = std::max(width, t.name.size());
  uint64_t equal = 0, within = 0, differing = 0;
  bool header = false;
  for (const TensorDiff& t : tensors) {
    equal += t.equal_bits;
    within += t.matches() && !t.equal_bits;
    differing += !t.matches();
    if (!verbose && t.matches()) continue;
    if (!header) {
      out += fmt::format("{:<{}}  {:<14} {:>12} {:>12} {:>12}  {}\n", "name", width, "dtype a/b", "max abs", "max rel",
                         "beyond tol", "");
      header = true;
    }
    std::string note = t.equal_bits ? "equal bits" : t.matches() ? "within tolerance" : "DIFFERS";
    if (t.shape_differs())
      note = fmt::format("SHAPE {} vs {}", shape_to_string(t.shape_a), shape_to_string(t.shape_b));
    out += fmt::format("{:<{}}  {:<14} {:>12.4g} {:>12.4g} {:>12}  {}\n", t.name, width, t.dtype_a + "/" + t.dtype_b,
                       t.max_abs_diff, t.max_rel_diff, t.beyond_tolerance, note);
  }
  for (const std::string& n : only_in_a) out += fmt::format("only in a: {}\n", n);
  for (const std::string& n : only_in_b) out += fmt::format("only in b: {}\n", n);
  out += fmt::format(
      "{} tensors compared: {} equal bits, {} within tolerance (atol {:g}, rtol {:g}), {} differ; {} only in a, {} only "
      "in b; {} bytes read in {:.2f} s: {}\n",
      tensors.size(), equal, within, atol, rtol, differing, only_in_a.size(), only_in_b.size(), bytes_read, seconds,
      matches() ? "MATCH" : "DIFFERENT");
  return out;
}

}  // namespace wl
