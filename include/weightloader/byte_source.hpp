// Where checkpoint bytes come from: a byte source ("bytes at offsets") and an opener that finds
// sources by name (a file beside another, a directory's entries). Every format reader, loader and
// the I/O engine read through these two interfaces only, in the manner of LevelDB's
// RandomAccessFile and Env. Local files, memory regions and test doubles implement them; adding a
// kind of source (HTTP, S3) is one new implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/export.hpp"

namespace wl {

class UringQueue;  // a reader thread's io_uring, the I/O engine's own (io=uring)

// Hints a source may act on; sources without the matching capability ignore them.
enum class AccessHint {
  Sequential,    // the whole source will be read front to back (posix_fadvise SEQUENTIAL)
  WillNeed,      // this range is read soon: start fetching it (posix_fadvise WILLNEED)
  MappedWillNeed,  // the same, for reads out of mapping() (madvise WILLNEED)
  MappedDone,    // this range of mapping() has been copied out: drop its pages (madvise DONTNEED)
};

// What kind of bytes a source holds, for the I/O engine's choice of reads.
enum class SourceKind {
  LocalFile,  // a file of the local file system: scattered reads, O_DIRECT, page-cache residency
  Memory,     // bytes already in memory: mapping() is all of them
  Remote,     // bytes that come only by reading (a network, a test double): readers wait on them
};

// One destination of a scattered read. A null `data` is a gap: its bytes are read and dropped.
struct ReadBuffer {
  void* data;
  uint64_t length;
};

// What one more request costs a source, for the choice between reading the gap between two
// wanted ranges in one request and asking for them in two: a request waits `latency_s` before its
// first byte, then bytes come at `bytes_per_s`. A gap is worth reading through when
// gap / bytes_per_s < latency_s (io_plan.hpp: gap_worth_reading). Zero latency: requests cost
// nothing extra (a local file), so no unwanted byte is ever read.
struct RequestCost {
  double latency_s = 0;
  double bytes_per_s = 0;
};

// Bytes at offsets. Thread-safe: every method may be called from several threads at once.
// Errors are wl::Error naming name(); Error::retryable() tells a transient failure (worth trying
// again) from a final one.
class WL_API ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The path, URL or label this source is known by; error messages name it.
  virtual const std::string& name() const noexcept = 0;
  // Size in bytes when the source was opened.
  virtual uint64_t size() const noexcept = 0;
  // Reads up to `length` bytes at `offset`; returns the count, 0 only at the end of the source
  // (a remote or faulty source may return fewer before its end: read_exact goes on).
  virtual uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const = 0;

  // Up to `length` bytes at `offset`, fewer only at the end of the source; returns the count.
  uint64_t read_up_to(uint64_t offset, void* dst, uint64_t length) const;
  // Exactly `length` bytes at `offset`; a short read is ErrorCode::Truncated.
  void read_exact(uint64_t offset, void* dst, uint64_t length) const;
  // [offset, offset + length) as a string (for headers).
  std::string read_string(uint64_t offset, uint64_t length) const;

  // --- Optional capabilities the I/O engine asks for (the defaults say "not available"). ---
  virtual SourceKind kind() const noexcept { return SourceKind::Remote; }
  // Reads the bytes from `offset` on into `count` buffers in order (as preadv does); returns the
  // count, fewer than all only where read_some would return fewer. The default reads into the
  // first buffer only.
  virtual uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const;
  // O_DIRECT reads of whole aligned blocks (offset, length and dst multiples of direct_alignment());
  // returns the bytes read, fewer only at the end. Only when supports_direct().
  virtual bool supports_direct() const { return false; }
  static constexpr uint64_t direct_alignment() { return 4096; }
  virtual uint64_t read_direct(uint64_t offset, void* dst, uint64_t length) const;
  // The same read queued on a reader thread's io_uring (io=uring), its completion (bytes or -errno)
  // tagged `tag`; the engine waits for it. Only when supports_direct(); the default throws.
  virtual void queue_direct(UringQueue& queue, uint64_t offset, void* dst, uint64_t length, uint64_t tag) const;
  // The whole source as memory (a file mapping, a memory region), or nullptr. For a file, touching
  // a page past its current end raises SIGBUS: copy out of it under a SigbusGuard.
  virtual const std::byte* mapping() const { return nullptr; }
  // The size now (a file may have shrunk since it was opened); size() if the source cannot change.
  virtual uint64_t current_size() const { return size(); }
  // Bytes already in fast memory (the page cache; all of a memory region); nullopt if unknown.
  virtual std::optional<uint64_t> resident_bytes() const { return std::nullopt; }
  virtual void hint(uint64_t /*offset*/, uint64_t /*length*/, AccessHint /*hint*/) const {}
  // How the engine should read this source: bytes per request and requests in flight (0: the
  // engine's own choice, one reader per core).
  virtual uint64_t preferred_request_bytes() const { return 8ull << 20; }
  virtual unsigned preferred_concurrency() const { return 0; }
  // Bytes received over a network since the source was opened (response bodies: header reads
  // included); 0 for sources that are not remote.
  virtual uint64_t bytes_fetched() const { return 0; }
  // The cost of one more request (see RequestCost); nothing for sources read without requests.
  virtual RequestCost request_cost() const { return {}; }
  // Host memory each concurrent reader of this source holds besides the destination (a network
  // client's receive buffer, a cached head), for the engine's memory bound (max_host_memory).
  virtual uint64_t memory_per_reader() const { return 0; }
  // The version the source was opened at (a remote object's ETag, every read pinned to it), for
  // Opener::open_known in another process; empty when it has none.
  virtual std::string version() const { return {}; }
  // Waits until this source's bytes are final and checked (a file still being downloaded: until
  // it is whole and matches its digest); throws the error if they are not. The I/O engine calls it
  // after its reads, so that nothing read from such a file is reported loaded before it passed.
  virtual void settle() const {}
  // Wakes the reads waiting on bytes yet to come (a file still downloading) with Cancelled, and
  // fails later ones that would wait: the I/O engine calls it when it stops early, so that none of
  // its threads waits on.
  virtual void interrupt_waits() const {}
};

// Finds byte sources by name, and names relative to other names. Thread-safe.
class WL_API Opener {
 public:
  virtual ~Opener() = default;
  // FileNotFound (naming `name`) if there is no such source.
  virtual std::shared_ptr<ByteSource> open(const std::string& name) const = 0;
  // `name` as another process opened it, of `size` bytes at `version` (its size() and version()
  // there): a source whose opening is a request (a remote object's HEAD) skips it and stays pinned
  // to `version`, so that a changed object is still an error. The default opens `name`.
  virtual std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t /*size*/,
                                                 const std::string& /*version*/) const {
    return open(name);
  }
  virtual bool exists(const std::string& name) const = 0;
  virtual bool is_directory(const std::string& name) const = 0;
  // The names (as open() takes them) of the files directly inside a directory, sorted.
  virtual std::vector<std::string> list(const std::string& directory) const = 0;
  // `relative` inside `directory` ("a/b" + "c.json" → "a/b/c.json").
  virtual std::string join(const std::string& directory, const std::string& relative) const;
  // The directory holding `name` ("a/b/c.json" → "a/b"; "c.json" → ".").
  virtual std::string parent(const std::string& name) const;
  // `name` with links followed (verify names the blob a cache link points to); the name itself where
  // there are no links.
  virtual std::string resolved(const std::string& name) const { return name; }
};

// The local file system (pread, O_DIRECT, mmap, page-cache residency). Shared and stateless.
WL_API std::shared_ptr<const Opener> local_opener();

// Names routed by URL scheme: "s3://bucket/key" to the opener added for "s3", names without a
// scheme to `plain` (null: the local file system). Adding a kind of source is one Opener plus one
// add() line (with_remote() in weightloader/remote.hpp adds http, https and s3 to a Context's).
// add() is thread-safe, and so is everything else.
class WL_API SchemeOpener final : public Opener {
 public:
  explicit SchemeOpener(std::shared_ptr<const Opener> plain = nullptr);
  void add(const std::string& scheme, std::shared_ptr<const Opener> opener);  // InvalidArgument if taken
  std::vector<std::string> schemes() const;

  std::shared_ptr<ByteSource> open(const std::string& name) const override { return route(name).open(name); }
  std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t size, const std::string& version) const override {
    return route(name).open_known(name, size, version);
  }
  bool exists(const std::string& name) const override { return route(name).exists(name); }
  bool is_directory(const std::string& name) const override { return route(name).is_directory(name); }
  std::vector<std::string> list(const std::string& directory) const override { return route(directory).list(directory); }
  std::string join(const std::string& directory, const std::string& relative) const override {
    return route(directory).join(directory, relative);
  }
  std::string parent(const std::string& name) const override { return route(name).parent(name); }
  std::string resolved(const std::string& name) const override { return route(name).resolved(name); }

 private:
  const Opener& route(const std::string& name) const;  // InvalidArgument for an unknown scheme

  struct State;
  std::shared_ptr<State> state_;
  std::shared_ptr<const Opener> plain_;
};

// The last part of a name, path or URL ("a/b/c.json" → "c.json").
inline std::string base_name(const std::string& name) { return name.substr(name.find_last_of('/') + 1); }

// An opener that opens each name once and hands out the same source after: a loader reads a
// checkpoint's header, its catalogue and its data through one object per file, so a remote
// object is pinned to the version (ETag) it had when first opened. It asks `inner` each question
// once too (exists, is_directory, list: a round trip each over a network), and answers whether a
// file exists by opening it, so that the open that follows costs nothing more. Thread-safe.
class WL_API CachingOpener final : public Opener {
 public:
  explicit CachingOpener(std::shared_ptr<const Opener> inner) : inner_(std::move(inner)) {}
  std::shared_ptr<ByteSource> open(const std::string& name) const override;
  // Opened through inner's open_known, then handed out as open(name) is.
  std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t size, const std::string& version) const override;
  // The next open(name) is open_known(name, size, version): a catalogue received from another
  // process says what its files were there, and opening them costs no request.
  void expect(const std::string& name, uint64_t size, std::string version) const;
  bool exists(const std::string& name) const override;
  bool is_directory(const std::string& name) const override;
  std::vector<std::string> list(const std::string& directory) const override;
  std::string join(const std::string& directory, const std::string& relative) const override {
    return inner_->join(directory, relative);
  }
  std::string parent(const std::string& name) const override { return inner_->parent(name); }
  std::string resolved(const std::string& name) const override { return inner_->resolved(name); }
  // What every source opened through this opener has fetched over a network so far.
  uint64_t bytes_fetched() const;

 private:
  std::shared_ptr<const Opener> inner_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<ByteSource>> opened_;
  mutable std::map<std::string, std::pair<uint64_t, std::string>> expected_;  // expect(): size and version
  mutable std::map<std::string, bool> exists_, directories_;
  mutable std::map<std::string, std::vector<std::string>> listed_;
};


// Memory kept alive by its owner: a heap buffer, bytes received over a network, or a caller's
// buffer (a Python object) held by `keep_alive` for as long as anything reads it.
struct WL_API MemoryRegion {
  const std::byte* data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<const void> keep_alive;

  WL_API static MemoryRegion copy_of(const void* data, uint64_t size);  // owns a copy
  WL_API static MemoryRegion of_string(std::string bytes);              // owns the string
};

// A byte source over a memory region, known by `name` (a label such as "<memory>").
WL_API std::shared_ptr<ByteSource> memory_source(std::string name, MemoryRegion region);

// Named memory regions as a file tree ("dir/meta.txt", "dir/model.bin"): a whole checkpoint
// received as bytes opens through the same readers as one on disk. Directories are implied by
// the names. Not thread-safe while files are being added; thread-safe for reading after.
class WL_API MemoryOpener final : public Opener {
 public:
  void add(const std::string& name, MemoryRegion region);
  void add(std::shared_ptr<ByteSource> source);  // any source (a test double), under its name()
  std::shared_ptr<ByteSource> open(const std::string& name) const override;
  bool exists(const std::string& name) const override;
  bool is_directory(const std::string& name) const override;
  std::vector<std::string> list(const std::string& directory) const override;

 private:
  std::map<std::string, std::shared_ptr<ByteSource>> files_;
};

}  // namespace wl
