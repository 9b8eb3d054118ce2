#include "remote/hub_download/hub_download.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/atomic_output.hpp"
#include "core/file.hpp"
#include "remote/hub_download/blob_download.hpp"
#include "remote/hub_client.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"

namespace wl::remote {

namespace {

namespace fs = std::filesystem;

// An exclusive flock on `path`, held for the object's life. Where the file system does not
// support locks it is not held: the partial files and the atomic rename keep the cache correct.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_errno("cannot create the lock file", path);
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

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

// snapshots/<commit>/<path> → ../../blobs/<etag> (one more ../ per folder in path), replacing a link
// that was there.
void link_into_snapshot(const fs::path& snapshot, const std::string& path, const std::string& etag) {
  const fs::path link = snapshot / path;
  fs::create_directories(link.parent_path());
  std::string target = "../../blobs/" + etag;
  for (char c : path)
    if (c == '/') target = "../" + target;
  const fs::path tmp = link.string() + fmt::format(".wl-tmp-{}", ::getpid());
  fs::remove(tmp);
  fs::create_symlink(target, tmp);
  fs::rename(tmp, link);
}

// Several files and pieces of files at once; the first failure stops every transfer. The worker
// that fetches a file's last piece checks and renames it (BlobDownload::finish) while the others
// go on downloading.
void fetch_all(std::vector<std::unique_ptr<BlobDownload>>& blobs, TransferProgress& progress, unsigned concurrency) {
  std::vector<std::pair<size_t, size_t>> work;  // (blob, piece)
  const auto pieces_left = std::make_unique<std::atomic<size_t>[]>(blobs.size());
  for (size_t b = 0; b < blobs.size(); ++b) {
    pieces_left[b] = blobs[b]->piece_count();
    for (size_t i = 0; i < blobs[b]->piece_count(); ++i) work.emplace_back(b, i);
  }
  const RetryPolicy policy = RetryPolicy::from_environment();
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::exception_ptr first;
  bool first_is_cancel = false;  // a transfer stopped because another failed is not the cause
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      try {
        const auto [b, piece] = work[i];
        blobs[b]->fetch(piece, progress, policy);
        if (--pieces_left[b] == 0) blobs[b]->finish();
      } catch (...) {
        bool cancel = false;
        try {
          throw;
        } catch (const Error& e) {
          cancel = e.code() == ErrorCode::Cancelled;
        } catch (...) {
        }
        std::lock_guard lock(mutex);
        if (!first || (first_is_cancel && !cancel)) {
          first = std::current_exception();
          first_is_cancel = cancel;
        }
        progress.stop();
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>(std::max(1u, concurrency), work.size());
  for (size_t t = 1; t < n; ++t) threads.emplace_back(worker);
  if (n > 0) worker();
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
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

  std::string run() {
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
    fetch(wanted);
    if (request_.revision != commit_) write_atomically(repo_ / "refs" / request_.revision, commit_);
    return snapshot().string();
  }

 private:
  fs::path snapshot() const { return repo_ / "snapshots" / commit_; }

  // The files into blobs/ (those not there yet) and their links into the snapshot.
  void fetch(std::vector<std::string> paths) {
    std::sort(paths.begin(), paths.end());  // every process takes the locks in the same order
    for (const std::string& p : paths)
      if (p.empty() || p.starts_with("/") || fs::path(p).lexically_normal().string().starts_with("..") ||
          p.find("/../") != std::string::npos)
        throw Error(ErrorCode::InvalidArgument, fmt::format("the hub lists file \"{}\", which would lie outside the snapshot", p),
                    request_.model_id);
    std::vector<HubFile> files;
    for (const std::string& p : paths) {
      files.push_back(hub_file(hub_, request_.model_id, commit_, p));
      if (!files.back().commit.empty() && files.back().commit != commit_)
        throw Error(ErrorCode::Io,
                    fmt::format("the hub answers '{}' from commit {}, not from {} that its API named", p,
                                files.back().commit, commit_),
                    hub_resolve_url(hub_, request_.model_id, commit_, p));
    }
    std::vector<std::unique_ptr<FileLock>> locks;
    std::vector<std::unique_ptr<BlobDownload>> blobs;
    std::set<std::string> taken;  // two paths with the same content are one blob
    fs::create_directories(repo_ / "blobs");
    for (const HubFile& f : files) {
      const fs::path blob = repo_ / "blobs" / f.etag;
      if (taken.contains(f.etag)) continue;
      taken.insert(f.etag);
      locks.push_back(std::make_unique<FileLock>(cache_ / ".locks" / folder_ / (f.etag + ".lock")));
      std::error_code ec;
      if (fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == f.size) continue;  // already in the cache
      blobs.push_back(std::make_unique<BlobDownload>(f, hub_, blob.string(), piece_bytes()));
    }
    uint64_t missing = 0;
    for (const auto& b : blobs) missing += b->missing_bytes();
    TransferProgress progress(missing, request_.progress);
    try {
      fetch_all(blobs, progress, request_.concurrency);
      for (auto& b : blobs)
        if (!b->finished()) b->finish();  // nothing was missing: resumed whole, or empty
    } catch (...) {
      for (auto& b : blobs) b->keep_for_resume();
      throw;
    }
    for (const HubFile& f : files) link_into_snapshot(snapshot(), f.path, f.etag);
  }

  const HfDownload& request_;
  HubEndpoint hub_;
  fs::path cache_;
  std::string folder_;
  fs::path repo_;
  std::string commit_;
};

}  // namespace

std::string download_from_hub(const HfDownload& request) { return SnapshotDownload(request).run(); }

}  // namespace wl::remote
