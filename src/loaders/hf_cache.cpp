#include "weightloader/hf_cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace fs = std::filesystem;

std::string hf_hub_cache_dir() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return (fs::path(h) / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/root") / ".cache" / "huggingface" / "hub").string();
}

bool looks_like_hf_model_id(const std::string& s) {
  static const std::regex id(R"(^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$)");
  std::error_code ec;
  return !fs::exists(s, ec) && std::regex_match(s, id) && s.find("..") == std::string::npos;
}

std::string resolve_hf_snapshot(const std::string& model_id, const std::string& revision) {
  if (!looks_like_hf_model_id(model_id))
    throw Error(ErrorCode::InvalidArgument, fmt::format("'{}' is neither an existing path nor a model id like org/name", model_id));
  static const std::regex safe_revision(R"(^[A-Za-z0-9][A-Za-z0-9._/-]*$)");
  if (!std::regex_match(revision, safe_revision) || revision.find("..") != std::string::npos)
    throw Error(ErrorCode::InvalidArgument, fmt::format("invalid revision '{}'", revision));
  std::string folder = "models--" + model_id;
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at)) folder.replace(at, 1, "--");
  const fs::path repo = fs::path(hf_hub_cache_dir()) / folder;
  std::string commit = revision;
  static const std::regex full_hash(R"(^[0-9a-f]{40}$)");
  std::vector<std::string> looked;
  if (!std::regex_match(revision, full_hash)) {
    const fs::path ref = repo / "refs" / revision;
    looked.push_back(ref.string());
    std::ifstream in(ref);
    if (in) std::getline(in, commit);
    if (!in || !std::regex_match(commit, full_hash)) commit.clear();
  }
  if (!commit.empty()) {
    const fs::path snapshot = repo / "snapshots" / commit;
    looked.push_back(snapshot.string());
    std::error_code ec;
    if (fs::is_directory(snapshot, ec)) return snapshot.string();
  }
  throw Error(ErrorCode::FileNotFound,
              fmt::format("model '{}' at revision '{}' is not in the local Hugging Face cache; looked in {} (cache from "
                          "HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub); downloading is not supported yet",
                          model_id, revision, fmt::join(looked, " and ")));
}

}  // namespace wl
