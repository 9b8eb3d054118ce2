#include "weightloader/verify_checkpoint.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checks/tensor_stream.hpp"
#include "weightloader/content_digest.hpp"

namespace wl {

namespace {

struct Counts {
  uint64_t nan = 0, inf = 0, nonzero = 0;
  void merge(const Counts& c) {
    nan += c.nan;
    inf += c.inf;
    nonzero += c.nonzero;
  }
};

// On the bits, so that the loop vectorises: all exponent bits set is Inf (mantissa 0) or NaN;
// +0 and -0 are zero. `Bits` is the unsigned integer of the float's width.
template <typename Bits>
Counts count(const void* data, uint64_t n) {
  constexpr int kBits = sizeof(Bits) * 8;
  constexpr Bits kAbs = Bits(~Bits(0)) >> 1;
  constexpr Bits kInf = kBits == 32 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
  Bits word = 0;
  uint64_t nan = 0, inf = 0, zero = 0;
  const auto* bytes = static_cast<const std::byte*>(data);
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(&word, bytes + i * sizeof(Bits), sizeof(Bits));
    const Bits magnitude = word & kAbs;
    nan += magnitude > kInf;
    inf += magnitude == kInf;
    zero += magnitude == 0;
  }
  return {nan, inf, n - zero};
}

Counts count_piece(const StreamPiece& piece) {
  return piece.dtype == DType::F64 ? count<uint64_t>(piece.data[0], piece.count) : count<uint32_t>(piece.data[0], piece.count);
}

void check_files(const WeightSource& s, VerifyReport& r) {
  std::map<std::string, uint64_t> ends;
  for (const TensorInfo& t : s.tensors()) {
    uint64_t& end = ends[s.file_of(t)];
    end = std::max(end, t.offset + t.nbytes);
    if (t.decoder && t.decoder->aux_block_bytes())  // split encodings keep their scales further on
      end = std::max(end, t.aux_offset + t.numel() / t.decoder->block_elems() * t.decoder->aux_block_bytes());
  }
  const Opener& opener = *s.opener();
  for (const auto& [name, end] : ends) {
    FileCheck f;
    f.name = name;
    f.resolved = opener.resolved(name);
    const std::shared_ptr<ByteSource> source = opener.open(name);
    f.size = source->current_size();
    f.tensor_end = end;
    if (f.size < end)
      r.findings.push_back(fmt::format("{}: {} bytes, but its header places tensor bytes up to {}", name, f.size, end));
    if (const std::string blob = base_name(f.resolved); digest_named_by(blob) == DigestKind::Sha256) {
      f.expected_sha256 = blob;
      f.sha256 = content_digest(*source, DigestKind::Sha256);
      if (*f.sha256 != blob)
        r.findings.push_back(fmt::format("{}: sha256 {} but the cache blob {} is named for {}", name, *f.sha256,
                                         f.resolved, blob));
    }
    r.files.push_back(std::move(f));
  }
}

}  // namespace

VerifyReport verify_checkpoint(const WeightSource& s, const VerifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  VerifyReport r;
  r.origin = s.origin();
  r.format = s.format();
  std::vector<StreamGroup> groups;  // one per tensor, scanned as F32 (F64 for 64-bit types)
  for (const TensorInfo& t : s.tensors()) {
    r.tensor_bytes += t.nbytes;
    groups.push_back({{{&s, &t}}, dtype_size(t.dtype) == 8 ? DType::F64 : DType::F32});
    r.tensors.push_back({t.name, t.stored_type(), t.shape, t.numel(), 0, 0, false});
  }
  StreamOptions so;
  so.window_bytes = o.window_bytes;
  so.io = o.io;
  std::vector<Counts> counts(groups.size());
  r.bytes_read = stream_tensors(groups, so, [&](const StreamPiece& piece) { counts[piece.group].merge(count_piece(piece)); });
  for (size_t g = 0; g < counts.size(); ++g) {
    TensorCheck& t = r.tensors[g];
    t.nan = counts[g].nan;
    t.inf = counts[g].inf;
    t.all_zero = t.elements > 0 && counts[g].nonzero == 0;
  }
  for (const TensorCheck& t : r.tensors) {
    if (t.nan) r.findings.push_back(fmt::format("tensor '{}': {} NaN of {} values", t.name, t.nan, t.elements));
    if (t.inf) r.findings.push_back(fmt::format("tensor '{}': {} Inf of {} values", t.name, t.inf, t.elements));
    if (t.all_zero) r.findings.push_back(fmt::format("tensor '{}': all {} values are zero", t.name, t.elements));
  }
  check_files(s, r);
  if (auto it = s.metadata().find("total_size"); it != s.metadata().end()) {
    uint64_t claimed = 0;
    try {
      claimed = std::stoull(it->second);
    } catch (const std::exception&) {
      r.findings.push_back(fmt::format("the index's metadata.total_size '{}' is not a number", it->second));
    }
    r.index_total_size = claimed;
    if (claimed != r.tensor_bytes)
      r.findings.push_back(fmt::format("the index's metadata.total_size is {} but the tensors hold {} bytes", claimed,
                                       r.tensor_bytes));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string VerifyReport::to_json() const {
  nlohmann::ordered_json j;
  j["origin"] = origin;
  j["format"] = format;
  j["ok"] = ok();
  j["findings"] = findings;
  j["tensors"] = nlohmann::ordered_json::array();
  for (const TensorCheck& t : tensors)
    j["tensors"].push_back({{"name", t.name},
                            {"dtype", t.dtype},
                            {"shape", t.shape},
                            {"elements", t.elements},
                            {"nan", t.nan},
                            {"inf", t.inf},
                            {"all_zero", t.all_zero}});
  j["files"] = nlohmann::ordered_json::array();
  for (const FileCheck& f : files) {
    nlohmann::ordered_json e = {{"name", f.name}, {"resolved", f.resolved}, {"size", f.size}, {"tensor_end", f.tensor_end}};
    e["expected_sha256"] = f.expected_sha256 ? nlohmann::ordered_json(*f.expected_sha256) : nullptr;
    e["sha256"] = f.sha256 ? nlohmann::ordered_json(*f.sha256) : nullptr;
    j["files"].push_back(std::move(e));
  }
  j["index_total_size"] = index_total_size ? nlohmann::ordered_json(*index_total_size) : nullptr;
  j["tensor_bytes"] = tensor_bytes;
  j["bytes_read"] = bytes_read;
  j["seconds"] = seconds;
  return j.dump(2);
}

std::string VerifyReport::to_string(bool verbose) const {
  std::string out;
  if (verbose) {
    size_t width = 4;
    for (const TensorCheck& t : tensors) width = std::max(width, t.name.size());
    out += fmt::format("{:<{}}  {:<8} {:>12} {:>10} {:>10}  {}\n", "name", width, "dtype", "values", "NaN", "Inf", "");
    for (const TensorCheck& t : tensors)
      out += fmt::format("{:<{}}  {:<8} {:>12} {:>10} {:>10}  {}\n", t.name, width, t.dtype, t.elements, t.nan, t.inf,
                         t.all_zero ? "all zero" : "");
    for (const FileCheck& f : files)
      out += fmt::format("file {}: {} bytes{}\n", f.name, f.size,
                         f.sha256 ? fmt::format(", sha256 {}", *f.sha256) : std::string());
  }
  for (const std::string& f : findings) out += "FINDING " + f + "\n";
  uint64_t hashed = 0;
  for (const FileCheck& f : files) hashed += f.sha256.has_value();
  out += fmt::format("{} tensors in {} files ({} bytes of tensors, {} files checked against their sha256) read in {:.2f} s: {}\n",
                     tensors.size(), files.size(), tensor_bytes, hashed, seconds,
                     ok() ? "OK" : fmt::format("{} finding(s)", findings.size()));
  return out;
}

}  // namespace wl
