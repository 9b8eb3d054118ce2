#include "loaders/rank_agreement.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wl {

namespace {

// FNV-1a: stable across hosts and builds (std::hash is not).
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string describe_checkpoint(const WeightSource& source) {
  std::string all = source.format();
  std::vector<std::string> files;
  for (const auto& [key, value] : source.metadata()) all += "\n" + key + "=" + value;
  for (const TensorInfo& t : source.tensors()) {
    const std::string file = std::filesystem::path(source.file_of(t)).filename().string();
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    all += fmt::format("\n{} {} [{}] {} {} {}", t.name, t.stored_type(), fmt::join(t.shape, ","), file, t.offset, t.nbytes);
  }
  return fmt::format("{} tensors ({} bytes) in {} {} [{}], header hash {:016x}", source.tensors().size(), source.total_bytes(),
                     source.format(), files.size() == 1 ? "file" : "files", fmt::join(files, ", "), fnv1a(all));
}

void agree(Communicator& comm, const std::string& stage, const std::optional<Error>& failure, const std::string& checkpoint) {
  nlohmann::json mine{{"ok", !failure}, {"checkpoint", checkpoint}};
  if (failure) {
    mine["code"] = int(failure->code());
    std::string what = failure->what();  // without its " [Code]": the agreed error adds it again
    const std::string tag = fmt::format(" [{}]", error_code_name(failure->code()));
    if (what.ends_with(tag)) what.resize(what.size() - tag.size());
    mine["what"] = what;
  }
  const std::vector<std::string> all = all_gather_strings(comm, mine.dump());
  const unsigned n = comm.size();
  std::vector<nlohmann::json> status;
  for (const std::string& s : all) status.push_back(nlohmann::json::parse(s));
  // Ranks that failed alike are named together: "ranks 0, 1 of 2 failed loading: ...".
  std::vector<std::pair<std::string, std::vector<unsigned>>> causes;
  std::optional<ErrorCode> code;
  for (unsigned r = 0; r < n; ++r) {
    if (status[r]["ok"]) continue;
    if (!code) code = ErrorCode(status[r]["code"].get<int>());
    const std::string what = status[r]["what"];
    auto same = std::find_if(causes.begin(), causes.end(), [&](const auto& c) { return c.first == what; });
    if (same == causes.end()) causes.push_back({what, {r}});
    else same->second.push_back(r);
  }
  std::string failed;
  for (const auto& [what, ranks] : causes)
    failed += fmt::format("{}{} {} of {} failed {}: {}", failed.empty() ? "" : "; ", ranks.size() == 1 ? "rank" : "ranks",
                          fmt::join(ranks, ", "), n, stage, what);
  if (code) throw Error(*code, failed);
  for (unsigned r = 1; r < n; ++r)
    if (status[r]["checkpoint"] != status[0]["checkpoint"])
      throw Error(ErrorCode::RanksDisagree,
                  fmt::format("ranks see different checkpoints ({}): rank {} of {} has {}; rank 0 has {}", stage, r, n,
                              status[r]["checkpoint"].get<std::string>(), status[0]["checkpoint"].get<std::string>()));
}

}  // namespace wl
