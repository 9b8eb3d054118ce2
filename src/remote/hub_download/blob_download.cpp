#include "remote/hub_download/blob_download.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/content_digest.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

// Stable per blob and machine: a rerun finds its partial file; another machine sharing the cache
// (where locks may not be honoured) writes its own.
std::string partial_suffix() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !*host) std::strcpy(host, "localhost");
  for (char* c = host; *c; ++c)
    if (*c == '/' || *c == '.') *c = '_';
  return std::string(".wl-partial-") + host;
}

Error cancelled(const std::string& url) {
  return Error(ErrorCode::Cancelled, "download cancelled by the progress callback", url);
}

}  // namespace

void TransferProgress::add(uint64_t bytes) {
  const uint64_t done = done_ += bytes;
  if (!callback_ || stopped_) return;
  std::lock_guard lock(mutex_);
  if (!stopped_ && !callback_(std::min(done, total_), total_)) {
    cancelled_ = true;
    stopped_ = true;
  }
}

BlobDownload::BlobDownload(HubFile file, const HubEndpoint& hub, std::string blob_path, uint64_t piece_bytes)
    : file_(std::move(file)), hub_(hub), blob_path_(std::move(blob_path)), partial_path_(blob_path_ + partial_suffix()),
      same_host_(!hub.headers_for(file_.download_url).empty() || file_.download_url.starts_with(hub.url + "/")) {
  fd_ = ::open(partial_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw errno_error("cannot create the partial download file", partial_path_);
  struct stat st{};
  if (::fstat(fd_, &st) != 0) throw errno_error("fstat failed", partial_path_);
  resumed_ = static_cast<uint64_t>(st.st_size);
  if (resumed_ > file_.size) {  // not this file's prefix: start again
    if (::ftruncate(fd_, 0) != 0) throw errno_error("ftruncate failed", partial_path_);
    resumed_ = 0;
  }
  const uint64_t missing = file_.size - resumed_;
  piece_bytes_ = piece_bytes;
  piece_count_ = missing == 0 ? 0 : static_cast<size_t>((missing + piece_bytes - 1) / piece_bytes);
  pieces_ = std::make_unique<Piece[]>(piece_count_);
  for (size_t i = 0; i < piece_count_; ++i) {
    pieces_[i].begin = resumed_ + i * piece_bytes;
    pieces_[i].end = std::min(file_.size, pieces_[i].begin + piece_bytes);
  }
  follower_ = std::make_unique<DigestFollower>(fd_, partial_path_, digest_named_by(file_.etag), file_.size);
  follower_->advance(resumed_);
}

BlobDownload::~BlobDownload() {
  follower_.reset();  // its thread reads fd_
  if (fd_ >= 0) ::close(fd_);
}

uint64_t BlobDownload::received_bytes() const noexcept {
  uint64_t n = 0;
  for (size_t i = 0; i < piece_count_; ++i) n += pieces_[i].got;
  return n;
}

uint64_t BlobDownload::written_prefix() const {
  uint64_t prefix = resumed_;
  for (size_t i = 0; i < piece_count_; ++i) {
    const Piece& p = pieces_[i];
    const uint64_t got = p.got;
    prefix += got;
    if (p.begin + got < p.end) break;  // a gap follows
  }
  return prefix;
}

std::string BlobDownload::if_range(const RetryPolicy& policy) {
  if (same_host_) return fmt::format("\"{}\"", file_.etag);
  // Another host (a CDN) has ETags of its own: ask it once (without the token), so that even the
  // first request of a resumed piece is pinned to the version the others got.
  std::call_once(host_etag_once_, [&] {
    HttpRequest request;
    request.method = "HEAD";
    request.url = file_.download_url;
    const HttpResponse r = with_retries(policy, [&] {
      HttpResponse response = perform(request, file_.download_url);
      check_status(response, file_.download_url);
      return response;
    });
    if (const auto etag = r.headers.find("etag"); etag != r.headers.end()) host_etag_ = etag->second;
  });
  return host_etag_;
}

void BlobDownload::fetch(size_t i, TransferProgress& progress, const RetryPolicy& policy) {
  if (i >= piece_count_) throw Error(ErrorCode::InvalidArgument, fmt::format("no piece {}", i), partial_path_);
  Piece& piece = pieces_[i];
  const std::string& url = file_.download_url;
  with_retries(policy, [&] {
    if (progress.stopped()) throw cancelled(url);
    const uint64_t from = piece.begin + piece.got;
    if (from >= piece.end) return;
    HttpRequest request;
    request.url = url;
    request.range = std::make_pair(from, piece.end - 1);
    request.headers = hub_.headers_for(url);  // the token goes to the hub only, never to a CDN
    request.stop = &progress.stop_flag();
    if (const std::string etag = if_range(policy); !etag.empty()) request.headers.push_back("If-Range: " + etag);
    int write_errno = 0;
    const BodySink sink = [&](const char* data, size_t n) {
      if (progress.stopped()) return false;
      const uint64_t at = piece.begin + piece.got;
      const uint64_t take = std::min<uint64_t>(n, piece.end - at);
      for (uint64_t written = 0; written < take;) {
        const ssize_t w = ::pwrite(fd_, data + written, take - written, static_cast<off_t>(at + written));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          write_errno = w < 0 ? errno : ENOSPC;
          return false;
        }
        written += static_cast<uint64_t>(w);
      }
      const uint64_t before = piece.got.fetch_add(take);
      if (before / kArrivalBatch != (before + take) / kArrivalBatch || piece.begin + before + take == piece.end) arrived();
      follower_->advance(written_prefix());
      progress.add(take);
      return take == n;
    };
    HttpResponse response;
    try {
      response = perform(request, url, sink);
    } catch (const Error&) {
      if (progress.stopped()) throw cancelled(url);
      throw;  // a dropped connection is retryable: the next attempt resumes from piece.got
    }
    if (write_errno != 0) {
      errno = write_errno;
      throw errno_error("cannot write the download", partial_path_);
    }
    if (progress.stopped()) throw cancelled(url);
    if (response.status == 200) {
      changed_ = true;
      throw Error(ErrorCode::Io,
                  "HTTP 200 with the whole file instead of the range asked for: the file changed on the server during "
                  "the download (If-Range) or the server ignores ranges; run again to start over",
                  url);
    }
    check_status(response, url);
    if (piece.begin + piece.got < piece.end) {
      throw Error(ErrorCode::Io,
                  fmt::format("the answer for bytes [{}, {}) ended after {} bytes", from, piece.end,
                              piece.begin + piece.got - from),
                  url)
          .set_retryable(true);
    }
  });
}

void BlobDownload::finish() {
  struct stat st{};
  if (::fstat(fd_, &st) != 0) throw errno_error("fstat failed", partial_path_);
  if (static_cast<uint64_t>(st.st_size) != file_.size)
    throw Error(ErrorCode::Truncated, fmt::format("holds {} bytes, the hub says {}", st.st_size, file_.size), partial_path_);
  if (const auto kind = digest_named_by(file_.etag)) {
    const std::string digest = follower_->finish();
    if (digest != file_.etag) {
      ::unlink(partial_path_.c_str());
      throw Error(ErrorCode::ChecksumMismatch,
                  fmt::format("'{}' downloaded from {} has {} {}, but its ETag names {}; nothing was stored, run again",
                              file_.path, file_.download_url, *kind == DigestKind::Sha256 ? "sha256" : "git sha1",
                              digest, file_.etag),
                  blob_path_);
    }
  }
  if (::fdatasync(fd_) != 0) throw errno_error("fdatasync failed", partial_path_);
  if (::rename(partial_path_.c_str(), blob_path_.c_str()) != 0) throw errno_error("cannot rename the download", blob_path_);
  finished_ = true;
  arrived();
}

void BlobDownload::arrived() const {
  { std::lock_guard lock(arrival_mutex_); }  // a reader between its check and its wait sees the change
  arrival_.notify_all();
}

uint64_t BlobDownload::arrived_at(uint64_t offset) const {
  if (offset >= file_.size) return 0;
  if (finished_ || offset < resumed_) return (finished_ ? file_.size : resumed_) - offset;
  const Piece& p = pieces_[(offset - resumed_) / piece_bytes_];
  const uint64_t have = p.begin + p.got;
  return have > offset ? have - offset : 0;
}

bool BlobDownload::ended_at(uint64_t offset) const {
  if (finished_ || offset <= resumed_) return true;
  const Piece& p = pieces_[(offset - 1 - resumed_) / piece_bytes_];
  return offset == p.end;
}

uint64_t BlobDownload::read_arrived(uint64_t offset, void* dst, uint64_t length) const {
  if (offset >= file_.size || length == 0) return 0;
  const uint64_t want = std::min({length, kArrivalBatch, file_.size - offset});
  uint64_t ready = 0;
  {
    std::unique_lock lock(arrival_mutex_);
    arrival_.wait(lock, [&] {
      ready = arrived_at(offset);
      return ready >= want || (ready > 0 && ended_at(offset + ready)) || failure_ || interrupted_;
    });
    if (!ready && failure_) std::rethrow_exception(failure_);
    if (!ready) throw Error(ErrorCode::Cancelled, "the load stopped while waiting for these bytes to arrive", partial_path_);
  }
  const uint64_t n = std::min(length, ready);
  for (uint64_t done = 0; done < n;) {
    const ssize_t r = ::pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw errno_error("cannot read the file being downloaded", partial_path_);
    if (r == 0) return done;
    done += static_cast<uint64_t>(r);
  }
  return n;
}

void BlobDownload::wait_finished() const {
  std::unique_lock lock(arrival_mutex_);
  arrival_.wait(lock, [&] { return finished_ || failure_; });
  if (!finished_) std::rethrow_exception(failure_);
}

void BlobDownload::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(arrival_mutex_);
    if (!failure_) failure_ = std::move(error);
  }
  arrival_.notify_all();
}

void BlobDownload::interrupt_waits() const {
  {
    std::lock_guard lock(arrival_mutex_);
    interrupted_ = true;
  }
  arrival_.notify_all();
}

void BlobDownload::keep_for_resume() noexcept {
  if (finished_) return;
  follower_.reset();
  if (changed_) {
    ::unlink(partial_path_.c_str());
    return;
  }
  // Later bytes than the first gap are not kept.
  if (::ftruncate(fd_, static_cast<off_t>(written_prefix())) != 0) ::unlink(partial_path_.c_str());
}

}  // namespace wl::remote
