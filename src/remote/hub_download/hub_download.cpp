#include "remote/hub_download/hub_download.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/atomic_output.hpp"
#include "hf_cache/hf_weights_files.hpp"
#include "remote/hub_download/arriving_snapshot.hpp"
#include "remote/hub_download/blob_batch.hpp"
#include "remote/hub_client.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

namespace wl::remote {

namespace {

namespace fs = std::filesystem;

uint64_t piece_bytes() {
  const char* v = std::getenv("WL_HUB_PIECE_BYTES");
  const long long n = v && *v ? std::atoll(v) : 0;
  return n > 0 ? static_cast<uint64_t>(n) : 64ull << 20;
}

// Writes `text` to `path` through the one temp-then-rename writer: readers see the old or the new.
void write_atomically(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  AtomicFileWriter out(path.string());
  out.write(text.data(), text.size());
  out.commit();
}

// refs/<revision> names the commit a branch or tag pointed at (a commit needs none).
void write_ref(const fs::path& repo, const std::string& revision, const std::string& commit) {
  if (revision != commit) write_atomically(repo / "refs" / revision, commit);
}

std::vector<std::string> matching(const std::vector<std::string>& files, const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& f : files)
    for (const std::string& p : patterns)
      if (::fnmatch(p.c_str(), f.c_str(), 0) == 0) {
        out.push_back(f);
        break;
      }
  return out;
}

class SnapshotDownload {
 public:
  explicit SnapshotDownload(const HfDownload& request)
      : request_(request), hub_(HubEndpoint::from_environment()),
        cache_(request.cache_dir.empty() ? hf_hub_cache_dir() : request.cache_dir),
        folder_(hf_repo_folder(request.model_id)), repo_(cache_ / folder_) {
    check_hf_revision(request.revision);
  }

  HfSnapshot run() {
    const HubRevision revision = hub_revision(hub_, request_.model_id, request_.revision);
    commit_ = revision.commit;
    std::vector<std::string> wanted;
    std::string index;
    if (!request_.include.empty()) {
      wanted = matching(revision.files, request_.include);
      if (wanted.empty())
        throw Error(ErrorCode::NoMatchingFiles,
                    fmt::format("no file of '{}' at {} matches --include {}", request_.model_id, commit_,
                                fmt::join(request_.include, " ")));
    } else {
      HfFileChoice choice = choose_hf_files(revision.files);
      wanted = std::move(choice.files);
      index = choice.index;
    }
    if (!index.empty()) {  // the shards it lists, and only those
      fetch({index});
      const fs::path index_path = snapshot() / index;
      std::ifstream in(index_path, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::set<std::string> present(revision.files.begin(), revision.files.end());
      for (const std::string& shard : sharded_index_files(text, index_path.string())) {
        if (!present.contains(shard))
          throw Error(ErrorCode::IndexFileMissing,
                      fmt::format("the index lists shard \"{}\", which '{}' at {} does not have", shard,
                                  request_.model_id, commit_),
                      index_path.string());
        wanted.push_back(shard);
      }
      wanted.erase(std::find(wanted.begin(), wanted.end(), index));
    }
    if (!request_.stream) {
      fetch(wanted);
      write_ref(repo_, request_.revision, commit_);
      return {snapshot().string(), nullptr};
    }
    std::vector<std::string> weights;
    std::erase_if(wanted, [&](const std::string& p) {
      const bool weight = is_hf_weights_file(fs::path(p).filename().string());
      if (weight) weights.push_back(p);
      return weight;
    });
    fetch(wanted);  // config and tokenizer files: small, and read first
    return stream(weights);
  }

 private:
  fs::path snapshot() const { return repo_ / "snapshots" / commit_; }

  // Each file's metadata, the lock of its blob, and a download for each blob not in the cache yet.
  BlobBatch prepare(std::vector<std::string> paths) const {
    std::sort(paths.begin(), paths.end());  // every process takes the locks in the same order
    for (const std::string& p : paths)
      if (p.empty() || p.starts_with("/") || fs::path(p).lexically_normal().string().starts_with("..") ||
          p.find("/../") != std::string::npos)
        throw Error(ErrorCode::InvalidArgument, fmt::format("the hub lists file \"{}\", which would lie outside the snapshot", p),
                    request_.model_id);
    BlobBatch batch;
    for (const std::string& p : paths) {
      batch.files.push_back(hub_file(hub_, request_.model_id, commit_, p));
      if (!batch.files.back().commit.empty() && batch.files.back().commit != commit_)
        throw Error(ErrorCode::Io,
                    fmt::format("the hub answers '{}' from commit {}, not from {} that its API named", p,
                                batch.files.back().commit, commit_),
                    hub_resolve_url(hub_, request_.model_id, commit_, p));
    }
    std::set<std::string> taken;  // two paths with the same content are one blob
    fs::create_directories(repo_ / "blobs");
    for (const HubFile& f : batch.files) {
      const fs::path blob = repo_ / "blobs" / f.etag;
      if (taken.contains(f.etag)) continue;
      taken.insert(f.etag);
      batch.locks.push_back(std::make_unique<FileLock>(cache_ / ".locks" / folder_ / (f.etag + ".lock")));
      std::error_code ec;
      if (fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == f.size) continue;  // already in the cache
      batch.blobs.push_back(std::make_unique<BlobDownload>(f, hub_, blob.string(), piece_bytes()));
    }
    return batch;
  }

  // The files into blobs/ (those not there yet) and their links into the snapshot.
  void fetch(const std::vector<std::string>& paths) const {
    BlobBatch batch = prepare(paths);
    TransferProgress progress(batch.missing_bytes(), request_.stream ? nullptr : request_.progress);
    try {
      transfer(batch, progress, request_.concurrency);
    } catch (...) {
      for (auto& b : batch.blobs) b->keep_for_resume();
      throw;
    }
    for (const HubFile& f : batch.files) link_into_snapshot(snapshot(), f.path, f.etag);
  }

  // The files in the cache already are linked now; the others arrive behind the snapshot's
  // opener, and are linked (and the ref written) once all of them are in.
  HfSnapshot stream(const std::vector<std::string>& paths) const {
    BlobBatch batch = prepare(paths);
    fs::create_directories(snapshot());
    for (const HubFile& f : batch.files)
      if (!batch.download_of(f)) link_into_snapshot(snapshot(), f.path, f.etag);
    if (batch.blobs.empty()) {
      write_ref(repo_, request_.revision, commit_);
      return {snapshot().string(), nullptr};
    }
    std::vector<HubFile> files = batch.files;
    auto complete = [files = std::move(files), snapshot = snapshot(), repo = repo_, revision = request_.revision,
                     commit = commit_] {
      for (const HubFile& f : files) link_into_snapshot(snapshot, f.path, f.etag);
      write_ref(repo, revision, commit);
    };
    auto arriving = std::make_shared<ArrivingSnapshot>(std::move(batch), snapshot().string(), request_.concurrency,
                                                       std::move(complete));
    return {snapshot().string(), ArrivingSnapshot::opener(std::move(arriving))};
  }

  const HfDownload& request_;
  HubEndpoint hub_;
  fs::path cache_;
  std::string folder_;
  fs::path repo_;
  std::string commit_;
};

}  // namespace

HfSnapshot download_from_hub(const HfDownload& request) { return SnapshotDownload(request).run(); }

}  // namespace wl::remote
