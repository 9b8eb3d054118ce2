// One hub file downloaded into the cache's blobs/ folder: into our own partial file
// (blobs/<etag>.wl-partial-<host>, resumed where an earlier run stopped), by ranged GETs that may
// run in parallel (pieces), retried from the last byte received, then checked against the digest
// its ETag names (hashed as the bytes arrive) and flushed to disk before it is renamed to
// blobs/<etag> (atomic): a final name never holds a partial or wrong file, even after a crash.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote/hub_download/digest_follower.hpp"
#include "remote/hub_client.hpp"
#include "remote/retry.hpp"
#include "weightloader/source.hpp"

namespace wl::remote {

// Bytes received by every transfer of one download, reported to the caller's callback; once it
// returns false (or a transfer fails) every transfer stops.
class TransferProgress {
 public:
  TransferProgress(uint64_t total, ProgressCallback callback) : total_(total), callback_(std::move(callback)) {}
  void add(uint64_t bytes);  // may call the callback (serialised)
  void stop() noexcept { stopped_ = true; }
  bool stopped() const noexcept { return stopped_; }
  const std::atomic<bool>& stop_flag() const noexcept { return stopped_; }  // for HttpRequest::stop
  bool cancelled_by_caller() const noexcept { return cancelled_; }
  uint64_t done() const noexcept { return done_; }

 private:
  uint64_t total_;
  ProgressCallback callback_;
  std::mutex mutex_;
  std::atomic<uint64_t> done_{0};
  std::atomic<bool> stopped_{false}, cancelled_{false};
};

class BlobDownload {
 public:
  // Opens (creating or resuming) the partial file of `file` beside `blob_path`; pieces of at most
  // `piece_bytes` cover what is still missing.
  BlobDownload(HubFile file, const HubEndpoint& hub, std::string blob_path, uint64_t piece_bytes);
  ~BlobDownload();
  BlobDownload(const BlobDownload&) = delete;
  BlobDownload& operator=(const BlobDownload&) = delete;

  const HubFile& file() const noexcept { return file_; }
  size_t piece_count() const noexcept { return piece_count_; }
  uint64_t resumed_bytes() const noexcept { return resumed_; }
  uint64_t missing_bytes() const noexcept { return file_.size - resumed_; }
  uint64_t received_bytes() const noexcept;  // by this run's transfers so far

  // Fetches piece `i` (thread-safe across pieces), retried under `policy`, each attempt resuming
  // from its last byte. Cancelled once `progress` stopped.
  void fetch(size_t i, TransferProgress& progress, const RetryPolicy& policy);
  // Every piece fetched: checks size and digest and renames the partial file to the blob.
  // ChecksumMismatch (and the partial file removed) when the bytes are not the ones the ETag names.
  void finish();
  bool finished() const noexcept { return finished_; }
  // After a failure: keeps the bytes received without a gap for the next run (or removes the
  // partial file when the server's file changed).
  void keep_for_resume() noexcept;

  // --- Reading the file while it arrives (a streamed download). ---
  // Up to `length` bytes at `offset`, waiting until at least one is in (returns fewer when only
  // fewer are in yet; 0 only at the end of the file). Throws the download's failure.
  uint64_t read_arrived(uint64_t offset, void* dst, uint64_t length) const;
  // Waits until finish() has renamed the checked file; throws the download's failure.
  void wait_finished() const;
  // Wakes every reader with `error` (the download stopped); once.
  void fail(std::exception_ptr error) noexcept;
  // Wakes the readers waiting with Cancelled (their load stopped), and every later reader that
  // would wait: a read only gets bytes already in.
  void interrupt_waits() const;

 private:
  // Readers are woken each time a piece has this much more, and wait for as much (or a piece's
  // end): a few wake-ups and copies per MiB, not one per network read, leave the CPU (of a machine
  // with few cores) to the transfer itself.
  static constexpr uint64_t kArrivalBatch = 4u << 20;
  struct Piece {
    uint64_t begin = 0, end = 0;
    std::atomic<uint64_t> got{0};
  };
  std::string if_range(const RetryPolicy& policy);  // the ETag If-Range names (empty: none)
  uint64_t written_prefix() const;  // bytes from the start received without a gap
  uint64_t arrived_at(uint64_t offset) const;  // bytes received without a gap from `offset` on
  bool ended_at(uint64_t offset) const;  // `offset` ends the resumed prefix or a piece: more come apart
  void arrived() const;  // wakes the readers waiting for bytes

  HubFile file_;
  HubEndpoint hub_;  // a copy: a streamed download outlives the request that started it
  std::string blob_path_, partial_path_;
  int fd_ = -1;
  uint64_t resumed_ = 0;
  std::unique_ptr<Piece[]> pieces_;  // an array: atomics do not move
  size_t piece_count_ = 0;
  uint64_t piece_bytes_ = 1;
  bool same_host_;  // the bytes come from the hub itself, whose ETag If-Range can name
  std::once_flag host_etag_once_;
  std::string host_etag_;  // the download host's own ETag, as it sends it
  std::atomic<bool> changed_{false};
  std::atomic<bool> finished_{false};
  std::unique_ptr<DigestFollower> follower_;  // hashes and flushes behind the transfers
  mutable std::mutex arrival_mutex_;
  mutable std::condition_variable arrival_;
  std::exception_ptr failure_;  // under arrival_mutex_
  mutable bool interrupted_ = false;  // under arrival_mutex_
};

}  // namespace wl::remote
