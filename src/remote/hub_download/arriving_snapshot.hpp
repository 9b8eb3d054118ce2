// A streamed download (HfDownload::stream): the weights files of a snapshot transferred on a
// thread of their own into the cache, and read while they arrive through an opener of the
// snapshot's names (HfSnapshot::arriving).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "remote/hub_download/blob_batch.hpp"
#include "weightloader/byte_source.hpp"

namespace wl::remote {

class ArrivingSnapshot {
 public:
  // Starts transferring `batch` (`concurrency` at once); once every blob is in, `complete` runs
  // (the links and the ref). `snapshot` is the directory the files' names are in.
  ArrivingSnapshot(BlobBatch batch, std::string snapshot, unsigned concurrency, std::function<void()> complete);
  // Stops a transfer still under way and keeps what it received for the next run.
  ~ArrivingSnapshot();
  ArrivingSnapshot(const ArrivingSnapshot&) = delete;
  ArrivingSnapshot& operator=(const ArrivingSnapshot&) = delete;

  // Waits until every blob is in, checked and linked; throws the download's failure.
  void wait_done() const;

  // The snapshot's names: its arriving files through sources that wait for their bytes (and keep
  // `self` alive), every other name from the local file system.
  static std::shared_ptr<const Opener> opener(std::shared_ptr<ArrivingSnapshot> self);

 private:
  void run(unsigned concurrency, const std::function<void()>& complete);

  BlobBatch batch_;
  std::string snapshot_;
  TransferProgress progress_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool done_ = false;           // under mutex_
  std::exception_ptr failure_;  // under mutex_
  std::thread thread_;          // last: starts once the rest is set up
};

}  // namespace wl::remote
