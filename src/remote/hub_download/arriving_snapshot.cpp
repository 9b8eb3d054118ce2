#include "remote/hub_download/arriving_snapshot.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::remote {

namespace {

// One file of the snapshot while it arrives. Readers wait on the network's pace, as with any
// remote object; its version is the hub's ETag (the sha256 verify=sha256 checks against).
class ArrivingFile final : public ByteSource {
 public:
  ArrivingFile(std::string name, const BlobDownload& blob, std::shared_ptr<const ArrivingSnapshot> owner)
      : name_(std::move(name)), blob_(blob), owner_(std::move(owner)) {}
  const std::string& name() const noexcept override { return name_; }
  uint64_t size() const noexcept override { return blob_.file().size; }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override {
    return blob_.read_arrived(offset, dst, length);
  }
  // Reads are copies out of the page cache the download just wrote: a few large ones suffice.
  unsigned preferred_concurrency() const override { return 2; }
  uint64_t bytes_fetched() const override { return blob_.received_bytes(); }
  std::string version() const override { return blob_.file().etag; }
  void settle() const override { owner_->wait_done(); }
  void interrupt_waits() const override { blob_.interrupt_waits(); }

 private:
  std::string name_;
  const BlobDownload& blob_;
  std::shared_ptr<const ArrivingSnapshot> owner_;
};

class ArrivingOpener final : public Opener {
 public:
  explicit ArrivingOpener(std::map<std::string, std::shared_ptr<ByteSource>> arriving)
      : arriving_(std::move(arriving)) {}
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    if (const auto f = arriving_.find(name); f != arriving_.end()) return f->second;
    return local_->open(name);
  }
  bool exists(const std::string& name) const override { return arriving_.contains(name) || local_->exists(name); }
  bool is_directory(const std::string& name) const override { return local_->is_directory(name); }
  std::vector<std::string> list(const std::string& directory) const override {
    std::vector<std::string> names = local_->list(directory);
    for (const auto& [name, source] : arriving_)
      if (local_->parent(name) == directory) names.push_back(name);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }
  std::string join(const std::string& directory, const std::string& relative) const override {
    return local_->join(directory, relative);
  }
  std::string parent(const std::string& name) const override { return local_->parent(name); }
  std::string resolved(const std::string& name) const override {
    return arriving_.contains(name) ? name : local_->resolved(name);
  }

 private:
  std::map<std::string, std::shared_ptr<ByteSource>> arriving_;
  std::shared_ptr<const Opener> local_ = local_opener();
};

// The download's failure as its readers throw it. The I/O engine names the file a failed read
// was of (the snapshot's) and its tensor; the URL or blob the failure concerns stays in the message.
std::exception_ptr as_read_failure(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    if (e.file().empty()) return failure;
    Error named(e.code(), fmt::format("{}: {}", e.file(), e.message()));
    named.set_retryable(e.retryable());
    return std::make_exception_ptr(named);
  } catch (...) {
    return failure;
  }
}

}  // namespace

ArrivingSnapshot::ArrivingSnapshot(BlobBatch batch, std::string snapshot, unsigned concurrency,
                                   std::function<void()> complete)
    : batch_(std::move(batch)), snapshot_(std::move(snapshot)), progress_(batch_.missing_bytes(), nullptr),
      thread_([this, concurrency, complete = std::move(complete)] { run(concurrency, complete); }) {}

ArrivingSnapshot::~ArrivingSnapshot() {
  progress_.stop();
  thread_.join();
  if (!done_)
    for (auto& b : batch_.blobs) b->keep_for_resume();
}

void ArrivingSnapshot::run(unsigned concurrency, const std::function<void()>& complete) {
  try {
    transfer(batch_, progress_, concurrency);
    complete();
    std::lock_guard lock(mutex_);
    done_ = true;
  } catch (...) {
    const std::exception_ptr error = as_read_failure(std::current_exception());
    for (auto& b : batch_.blobs) b->fail(error);
    std::lock_guard lock(mutex_);
    failure_ = error;
  }
  changed_.notify_all();
}

void ArrivingSnapshot::wait_done() const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return done_ || failure_; });
  if (!done_) std::rethrow_exception(failure_);
}

std::shared_ptr<const Opener> ArrivingSnapshot::opener(std::shared_ptr<ArrivingSnapshot> self) {
  std::map<std::string, std::shared_ptr<ByteSource>> arriving;
  const std::shared_ptr<const Opener> local = local_opener();
  for (const HubFile& f : self->batch_.files)
    if (const BlobDownload* blob = self->batch_.download_of(f)) {
      const std::string name = local->join(self->snapshot_, f.path);
      arriving[name] = std::make_shared<ArrivingFile>(name, *blob, self);
    }
  return std::make_shared<ArrivingOpener>(std::move(arriving));
}

}  // namespace wl::remote
