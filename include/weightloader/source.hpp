// A lazy catalogue of the tensors of a checkpoint: what is there and where its bytes are.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/export.hpp"
#include "weightloader/tensor.hpp"

namespace wl {

class Decoder;

// Which of a catalogue's files (Catalogue::files, WeightSource::files) holds a tensor's bytes: an
// index into that list, so that a catalogue is a value whatever the paths are.
using SourceIndex = uint32_t;

// One tensor of a checkpoint. Nothing of its data has been read.
struct WL_API TensorInfo {
  std::string name;
  DType dtype = DType::F32;   // type of the values (after decoding, for encoded tensors)
  Shape shape;
  SourceIndex source = 0;     // the file that holds the bytes, among its catalogue's files
  uint64_t offset = 0;        // absolute byte offset of element 0 in that file
  uint64_t nbytes = 0;        // bytes stored in the source for this tensor
  uint64_t aux_offset = 0;    // split encodings only: absolute offset of block 0's aux part
  // Element strides as stored; empty means row-major contiguous. Only raw tensors may be strided.
  std::vector<int64_t> strides;
  std::shared_ptr<const Decoder> decoder;  // null: raw little-endian `dtype`
  // Row permutation along dim 0: logical row i is stored row row_order[i]; empty = identity.
  // Lets a reader present rows in another order (e.g. the rotary q/k layouts) without a copy.
  std::vector<uint64_t> row_order;
  // A tensor assembled from pieces laid side by side along `parts_dim`, in order (Meta's
  // model-parallel shards): each piece is a tensor of some file whose shape is this one's with
  // parts_dim replaced by its own extent; `offset` and `strides` are then unused, and `source` names
  // the first piece's file (in messages). A read
  // writes each piece's bytes straight into its block of the destination, never concatenating.
  // A row_order (parts_dim 0 only) must keep every row inside its piece.
  std::vector<TensorInfo> parts;
  size_t parts_dim = 0;

  uint64_t numel() const { return shape_numel(shape); }
  std::string stored_type() const;  // decoder name, or dtype name
};

// A tensor a decoder needs beside its own bytes (Decoder::side_reads), and the dtype to read it as.
struct SideRead {
  TensorInfo tensor;  // where its bytes are: `source` among the files of the catalogue that holds the decoder
  DType as = DType::F32;
};

// Decodes a stored encoding that is not plain little-endian `dtype` elements (quantised blocks,
// big-endian data, ...). Data is decoded block by block; a block never straddles a row.
class WL_API Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;           // shown as the stored type, e.g. "Q8_0"
  virtual uint64_t block_elems() const = 0;       // elements per block
  virtual uint64_t block_bytes() const = 0;       // stored bytes per block
  virtual DType output_dtype() const = 0;         // what decode() writes
  virtual void decode(const std::byte* src, uint64_t nblocks, void* dst) const = 0;
  // Split encodings keep the last aux_block_bytes() of each block in a second region of the file,
  // one after the other from TensorInfo::aux_offset (llama2.c v2: a tensor's int8 values, then
  // all its scales). decode() then receives the blocks' main parts followed by their aux parts.
  // 0 (the default): each block is contiguous.
  virtual uint64_t aux_block_bytes() const { return 0; }
  // The small tensors this decoder needs beside its own bytes (a quantized layer's scales, zero
  // points, g_idx, absmax), if any. A decoder holds no source: WeightSource::read_all puts them in
  // the same I/O plan as the data (so that neighbouring bytes share a request) and hands their values
  // to prepare() before the first block that needs them is decoded.
  virtual std::span<const SideRead> side_reads() const { return {}; }
  // Whether prepare() has had the values of side_reads() (later reads then leave them out).
  virtual bool prepared() const { return true; }
  // The values of side_reads(), in its order, each in the dtype its `as` names: what decode() needs
  // is derived here, once (later calls are ignored). A decoder without side reads is called with
  // none before any read, outside the reader threads (a type that cannot be decoded refuses here).
  virtual void prepare(std::span<const TensorView> side) const { (void)side; }
  // A decoder that can also write `dtype` itself (converting cache-sized pieces of its output as it
  // goes, so that no full-size intermediate passes through memory) says so here; the I/O engine
  // then calls decode_as() instead of decode() plus a conversion. The values must be those of
  // decode() converted to `dtype`.
  virtual bool decodes_as(DType dtype) const {
    (void)dtype;
    return false;
  }
  virtual void decode_as(DType dtype, const std::byte* src, uint64_t nblocks, void* dst) const {
    (void)dtype;
    decode(src, nblocks, dst);
  }
  // A decoder whose block is a row-major matrix of row_elems()-wide rows (a quantized layer decoded
  // whole, its rows the tensor's last dimension) can decode any range of the rows alone, so that a
  // slice of it (a tensor-parallel rank's) is decoded a tile at a time, never the whole block.
  // 0 (the default): whole blocks only.
  virtual uint64_t row_elems() const { return 0; }
  // Rows [row0, row1) of the block at `block` as output_dtype() values into `dst`.
  virtual void decode_block_rows(const std::byte* block, uint64_t row0, uint64_t row1, void* dst) const {
    (void)block, (void)row0, (void)row1, (void)dst;
  }
  // What rebuilds this decoder in another process (a rank given the catalogue as a value): a JSON
  // object naming a registered kind and its parameters, as decoder_from_spec reads it; empty where
  // the decoder holds more than a value can carry (a quantized layer's side tensors).
  virtual std::string spec() const { return {}; }
};

// A range [begin, end) along one dimension of a tensor. The default selects everything.
struct Slice {
  size_t dim = 0;
  uint64_t begin = 0;
  uint64_t end = UINT64_MAX;  // clamped to the dimension's size
};

// Called as bytes arrive; return false to cancel the load (it then throws ErrorCode::Cancelled).
using ProgressCallback = std::function<bool(uint64_t bytes_done, uint64_t bytes_total)>;

// How bytes get from the file to memory.
enum class IoMode {
  Auto,    // pread when most of the bytes are in the page cache, direct otherwise (see README)
  Mmap,    // copy (and convert) straight out of a read-only mapping of the file
  Pread,   // buffered positioned reads: straight into the destination, or through staging
  Direct,  // O_DIRECT reads through aligned buffers: cold reads that leave the page cache alone
  Uring,   // the same O_DIRECT reads, many in flight per thread on an io_uring (Linux 5.1+, liburing)
};
WL_API std::string_view io_mode_name(IoMode mode);                 // "auto", "mmap", "pread", "direct", "uring"
WL_API std::optional<IoMode> parse_io_mode(std::string_view name);  // the inverse; nullopt if unknown

// How the I/O engine runs: how many reader threads and how much staging memory they may use.
struct IoOptions {
  unsigned concurrency = 0;  // reader threads; 0: the sources' preference, else one per core
  uint64_t chunk_bytes = 0;  // a thread's unit of work; 0: the sources' preferred request size (8 MiB for files)
  IoMode mode = IoMode::Auto;
  // Staging memory for conversion, decoding and O_DIRECT bounce buffers, all threads together.
  // Chunks that need staging shrink so that each thread's share fits (never below one block).
  uint64_t staging_bytes = 32ull << 20;
  // Touch every destination page in parallel (MADV_POPULATE_WRITE) before reading, so that page
  // faults are taken on all threads at once instead of inside the copies. Unset: whichever this
  // machine measured faster (io=auto's memory probe, core/io_probe.hpp), else true.
  std::optional<bool> prefault;
  ProgressCallback progress;                // may be empty
  // Where the requests' dst addresses are. On a CUDA device, values are staged and converted on
  // the host and copied through a ring of pinned buffers of staging_bytes in all.
  Device device;
  // The engines of devices other than the CPU (a load fills it from its Context::devices).
  std::shared_ptr<const DeviceEngines> devices;
  // verify=sha256: each file read whole (header and gaps too), its bytes hashed in file order as
  // the reads deliver them, and the digest checked against the one that names the file (a cache
  // blob's name, the hub's ETag, a .sha256 sidecar, SHA256SUMS): ChecksumMismatch when they differ,
  // InvalidArgument when nothing names it.
  bool verify_sha256 = false;
  // The engine's own host memory (staging, decoder scratch, whole-tensor gathers, mapped windows,
  // the pinned ring) at most; 0: unbounded. Staging and threads are lowered until the reads fit;
  // OverBudget, before any read, when one thread with the least staging does not.
  uint64_t host_budget = 0;
};

// One read: a slice of a tensor converted into a caller's contiguous buffer.
struct ReadRequest {
  const struct TensorInfo* tensor = nullptr;
  Slice slice;
  DType dst_dtype = DType::F32;
  void* dst = nullptr;   // room for the slice's elements of dst_dtype, row-major
  // Elements between the starts of consecutive runs of the slice along its dim (one run per index
  // of the dimensions before it) in `dst`; 0: packed, the row-major layout of the slice. Lets a
  // piece of a tensor land in its block of a wider destination (a column block of a matrix).
  uint64_t dst_outer_stride = 0;
};

// What a batch of reads did.
struct ReadStats {
  uint64_t bytes_read = 0;     // bytes read from files
  unsigned threads = 0;        // reader threads used
  uint64_t staging_bytes = 0;  // staging memory used at most, all threads together
  IoMode mode = IoMode::Pread; // the mode that ran (never Auto)
  std::string mode_reason;     // why, when Auto chose it, e.g. "auto: 3% of the bytes in the page cache"
};

// What a batch of reads would do (WeightSource::estimate_reads), known without reading a tensor
// byte: the I/O engine's own plan of them, under the options fitted to host_budget.
struct ReadEstimate {
  std::map<std::string, uint64_t> file_bytes;  // bytes each file gives, by its name (WeightSource::file_of)
  uint64_t bytes_read = 0;                     // their sum: ReadStats::bytes_read of these reads
  unsigned threads = 0;
  uint64_t staging_bytes = 0;                  // the staging setting, lowered to fit host_budget
  IoMode mode = IoMode::Pread;
  std::string mode_reason;
  uint64_t host_bytes = 0;       // the engine's own host memory at most (what host_budget bounds)
  uint64_t min_host_bytes = 0;   // the same with one thread and the least staging
  // Bytes per second this machine measured for the way the reads would run (core/io_probe's
  // profile), and which figure it was; nullopt: "not measured" (no profile remembers it).
  std::optional<double> bytes_per_s;
  std::string rate_from;
};

// A tensor that already lives in memory (a NumPy array, a torch tensor, a caller's buffer): its
// bytes at `data`, with element `strides` (empty: row-major contiguous; non-negative), kept alive
// by `keep_alive` for as long as a source reads them.
struct MemoryTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;
  const void* data = nullptr;
  std::shared_ptr<const void> keep_alive;
};

// A checkpoint's tensors as a value: the files that hold their bytes, each named once as its
// opener names it, the tensors (each naming its file by index: TensorInfo::source), and the
// string metadata. What a format's reader makes of a file, and what a WeightSource holds.
struct WL_API Catalogue {
  std::vector<std::string> files;
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;

  // The index of file `name`, added to `files` unless it is there already.
  SourceIndex add_file(const std::string& name);
  // The name of the file that holds `t`'s bytes; InvalidArgument naming the tensor when its index
  // is not one of `files`.
  const std::string& file_of(const TensorInfo& t) const;
  // `t`, a tensor of a catalogue whose files are `from`, with its index (and its pieces') moved to
  // this catalogue's files, adding those it lacks. InvalidArgument when an index is not one of
  // `from`, or when `t`'s decoder reads side tensors (their indices are the decoder's own) from
  // files that would move.
  TensorInfo adopt(TensorInfo t, const std::vector<std::string>& from);
  // Every tensor of `other`, adopted (adopt above); its metadata is left out.
  void append(const Catalogue& other);
};

// Thread-safe for reading: several threads may read (and read_all) at once.
class WL_API WeightSource {
 public:
  // `opener` finds the catalogue's files; null: local_opener(). InvalidArgument when a tensor (a
  // piece of one, a side tensor of its decoder) names a file index the catalogue does not list.
  WeightSource(std::string format, std::string origin, Catalogue catalogue, std::shared_ptr<const Opener> opener = nullptr);
  // Tensors already in memory, loaded like a file's: name mapping, conversion, slices, shards,
  // strictness and the report all apply. `label` names them in messages ("<memory>").
  static std::unique_ptr<WeightSource> from_memory(std::string label, std::vector<MemoryTensor> tensors,
                                                   std::map<std::string, std::string> metadata = {});
  ~WeightSource();
  WeightSource(const WeightSource&) = delete;
  WeightSource& operator=(const WeightSource&) = delete;

  const std::string& format() const noexcept { return format_; }  // "safetensors", ...
  const std::string& origin() const noexcept { return origin_; }  // the path it came from
  const Catalogue& catalogue() const noexcept { return catalogue_; }
  const std::vector<TensorInfo>& tensors() const noexcept { return catalogue_.tensors; }
  const std::map<std::string, std::string>& metadata() const noexcept { return catalogue_.metadata; }
  // The files that hold the tensors' bytes, in index order (TensorInfo::source), as the opener names them.
  const std::vector<std::string>& files() const noexcept { return catalogue_.files; }
  // The name of the file that holds `tensor`'s bytes (Catalogue::file_of).
  const std::string& file_of(const TensorInfo& tensor) const { return catalogue_.file_of(tensor); }
  const std::shared_ptr<const Opener>& opener() const noexcept;
  // The same catalogue with more metadata (config.json found beside it), sharing its sources.
  std::unique_ptr<WeightSource> with_metadata(std::map<std::string, std::string> metadata) const;
  // The same catalogue with only the tensors `names` lists (TensorNotFound for one it lacks), sharing
  // its sources: a load of it reads those alone.
  std::unique_ptr<WeightSource> only(const std::vector<std::string>& names) const;
  const TensorInfo* find(std::string_view name) const;
  const TensorInfo& at(std::string_view name) const;  // throws TensorNotFound
  uint64_t total_bytes() const;                        // bytes stored for all tensors
  // Bytes received over a network for this catalogue so far (headers, then reads); 0 when local.
  uint64_t bytes_fetched() const;
  // The byte source of one of its files (an index of files()), opened once and shared with its
  // reads; InvalidArgument for an index it does not list.
  std::shared_ptr<ByteSource> file(SourceIndex index) const;

  // Reads (a slice of) a tensor into host memory at `dst`, converting to `dst_dtype`. Returns
  // bytes read from disk.
  uint64_t read(const TensorInfo& tensor, DType dst_dtype, void* dst, Slice slice = {}) const;
  // Many reads at once, run in parallel by the I/O engine.
  ReadStats read_all(const std::vector<ReadRequest>& requests, const IoOptions& io = {}) const;
  // What read_all would do with the same requests and options, reading no tensor byte (nor
  // measuring: an io=auto choice uses only what the profile remembers).
  ReadEstimate estimate_reads(const std::vector<ReadRequest>& requests, const IoOptions& io = {}) const;
  // Reads a whole tensor into a fresh heap tensor.
  TensorView load(const TensorInfo& tensor, std::optional<DType> dtype = std::nullopt) const;
  // Zero-copy: a view on the source's mapping (a file's, a memory region), when the bytes are raw
  // and contiguous and the source has one; the view keeps the source alive. Truncated if the
  // source is now shorter than the tensor's bytes. A file must not shrink while the view lives
  // (reading a page past its end would raise SIGBUS).
  std::optional<TensorView> view(const TensorInfo& tensor) const;

  // Shape of a slice of `tensor` (throws SliceOutOfBounds naming it and its file if it does not fit).
  Shape slice_shape(const TensorInfo& tensor, const Slice& slice) const;

 private:
  std::string format_;
  std::string origin_;
  Catalogue catalogue_;
  std::unordered_map<std::string, size_t> by_name_;
  // Each file opened once and shared by every read (and pinned to one version, for remote objects).
  std::shared_ptr<const Opener> opener_;
  std::shared_ptr<const CachingOpener> sources_;  // opener_ itself when it is one already
};

}  // namespace wl
