#include "remote/hub_download/blob_batch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace fs = std::filesystem;

FileLock::FileLock(const fs::path& path) {
  fs::create_directories(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw errno_error("cannot create the lock file", path);
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

FileLock::~FileLock() { ::close(fd_); }

uint64_t BlobBatch::missing_bytes() const {
  uint64_t missing = 0;
  for (const auto& b : blobs) missing += b->missing_bytes();
  return missing;
}

BlobDownload* BlobBatch::download_of(const HubFile& file) const {
  for (const auto& b : blobs)
    if (b->file().etag == file.etag) return b.get();
  return nullptr;
}

// The worker that fetches a file's last piece checks and renames it (BlobDownload::finish) while
// the others go on downloading.
void transfer(BlobBatch& batch, TransferProgress& progress, unsigned concurrency) {
  std::vector<std::unique_ptr<BlobDownload>>& blobs = batch.blobs;
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
  for (auto& b : blobs)
    if (!b->finished()) b->finish();  // nothing was missing: resumed whole, or empty
}

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

}  // namespace wl::remote
