#include "weightloader/report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"

namespace wl {

namespace {
std::string list_or_count(const std::vector<std::string>& names, bool verbose) {
  if (names.empty()) return "0";
  if (!verbose && names.size() > 8)
    return fmt::format("{} ({}, ... )", names.size(), fmt::join(names.begin(), names.begin() + 8, ", "));
  return fmt::format("{} ({})", names.size(), fmt::join(names, ", "));
}
}  // namespace

std::string NameMatch::to_string() const {
  auto side = [](const std::string& scheme, const std::string& prefix) {
    return prefix.empty() ? scheme : fmt::format("{} under {}", scheme, prefix);
  };
  return fmt::format("auto ({} → {}), {} of {} matched", side(from, from_prefix), side(to, to_prefix), matched, total);
}

std::string LoadReport::to_string(bool verbose) const {
  std::string out;
  out += fmt::format("source      {} ({})\n", source, format);
  if (names) out += fmt::format("names       {}\n", names->to_string());
  out += fmt::format("loaded      {} tensors\n", loaded.size());
  std::map<std::string, size_t> conversions;
  for (const ConvertedTensor& c : converted) ++conversions[fmt::format("{}->{}", c.from, dtype_name(c.to))];
  std::vector<std::string> conv;
  for (const auto& [k, n] : conversions) conv.push_back(fmt::format("{} x{}", k, n));
  out += fmt::format("converted   {}{}\n", converted.size(), conv.empty() ? "" : fmt::format(" ({})", fmt::join(conv, ", ")));
  std::vector<std::string> reshaped_names;
  for (const ReshapedTensor& r : reshaped)
    reshaped_names.push_back(fmt::format("{} {}->{}", r.name, shape_to_string(r.from), shape_to_string(r.to)));
  out += fmt::format("reshaped    {}\n", list_or_count(reshaped_names, verbose));
  out += fmt::format("skipped     {}\n", list_or_count(skipped, verbose));
  out += fmt::format("missing     {}\n", list_or_count(missing, verbose));
  out += fmt::format("unexpected  {}\n", list_or_count(unexpected, verbose));
  out += fmt::format("bytes read  {} ({:.3f} GB), written {} ({:.3f} GB)\n", bytes_read, bytes_read / 1e9, bytes_written,
                     bytes_written / 1e9);
  if (bytes_fetched) out += fmt::format("fetched     {} ({:.3f} GB) over the network\n", bytes_fetched, bytes_fetched / 1e9);
  out += fmt::format("time        {:.3f} s, {:.2f} GB/s read, {} threads, {:.1f} MiB staging (bound {:.1f} MiB)\n",
                     seconds, gbps(), concurrency, staging_bytes / 1048576.0, staging_bound / 1048576.0);
  out += fmt::format("io          {}{}\n", io_mode.empty() ? "none" : io_mode,
                     io_mode_reason.empty() ? "" : fmt::format(" ({})", io_mode_reason));
  if (!zero_copy.empty()) out += fmt::format("zero-copy   {}\n", list_or_count(zero_copy, verbose));
  return out;
}

std::string LoadReport::to_json() const {
  nlohmann::json j;
  j["source"] = source;
  j["format"] = format;
  j["loaded"] = loaded;
  j["converted"] = nlohmann::json::array();
  for (const ConvertedTensor& c : converted)
    j["converted"].push_back({{"name", c.name}, {"from", c.from}, {"to", std::string(dtype_name(c.to))}});
  j["reshaped"] = nlohmann::json::array();
  for (const ReshapedTensor& r : reshaped) j["reshaped"].push_back({{"name", r.name}, {"from", r.from}, {"to", r.to}});
  j["skipped"] = skipped;
  j["missing"] = missing;
  j["unexpected"] = unexpected;
  j["bytes_read"] = bytes_read;
  j["bytes_written"] = bytes_written;
  j["bytes_fetched"] = bytes_fetched;
  j["seconds"] = seconds;
  j["gbps"] = gbps();
  j["concurrency"] = concurrency;
  j["staging_bytes"] = staging_bytes;
  j["staging_bound"] = staging_bound;
  j["io_mode"] = io_mode;
  j["io_mode_reason"] = io_mode_reason;
  j["zero_copy"] = zero_copy;
  if (names)
    j["names"] = {{"summary", names->to_string()}, {"from", names->from}, {"from_prefix", names->from_prefix},
                  {"to", names->to}, {"to_prefix", names->to_prefix}, {"matched", names->matched}, {"total", names->total}};
  else
    j["names"] = nullptr;
  return j.dump(2);
}

LoadReport LoadReport::from_json(const std::string& json) {
  try {
    const nlohmann::json j = nlohmann::json::parse(json);
    LoadReport r;
    r.source = j.at("source");
    r.format = j.at("format");
    r.loaded = j.at("loaded").get<std::vector<std::string>>();
    for (const nlohmann::json& c : j.at("converted")) {
      const std::optional<DType> to = parse_dtype(c.at("to").get<std::string>());
      if (!to) throw Error(ErrorCode::InvalidArgument, fmt::format("not a load report: dtype {}", c.at("to").dump()));
      r.converted.push_back({c.at("name"), c.at("from"), *to});
    }
    for (const nlohmann::json& c : j.at("reshaped")) r.reshaped.push_back({c.at("name"), c.at("from"), c.at("to")});
    r.skipped = j.at("skipped").get<std::vector<std::string>>();
    r.missing = j.at("missing").get<std::vector<std::string>>();
    r.unexpected = j.at("unexpected").get<std::vector<std::string>>();
    r.bytes_read = j.at("bytes_read");
    r.bytes_written = j.at("bytes_written");
    r.bytes_fetched = j.value("bytes_fetched", uint64_t{0});  // absent from reports of older versions
    r.seconds = j.at("seconds");
    r.concurrency = j.at("concurrency");
    r.staging_bytes = j.at("staging_bytes");
    r.staging_bound = j.at("staging_bound");
    r.io_mode = j.at("io_mode");
    r.io_mode_reason = j.at("io_mode_reason");
    r.zero_copy = j.at("zero_copy").get<std::vector<std::string>>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::InvalidArgument, fmt::format("not a load report: {}", e.what()));
  }
}

}  // namespace wl
