// Decoders' side tensors read in the same plan as the data (core/side_reads.hpp): every block is
// decoded after its decoder has had its side values, whatever the layout, threads or io mode; side
// tensors stored beside the data are one request with it; a decoder takes its values once, and a
// later read leaves them out.
#include "core/side_reads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "support/counting_files.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// One block, the whole tensor: out[i] = q[i] (U8) · scale[i] (an F16 side tensor, taken as F32).
class Scaled final : public Decoder {
 public:
  Scaled(uint64_t n, TensorInfo scale, bool refuse = false) : n_(n), side_{SideRead{std::move(scale), DType::F32}}, refuse_(refuse) {}
  std::string name() const override { return "scaled"; }
  uint64_t block_elems() const override { return n_; }
  uint64_t block_bytes() const override { return n_; }
  DType output_dtype() const override { return DType::F32; }
  std::span<const SideRead> side_reads() const override { return side_; }
  bool prepared() const override { return prepared_; }
  void prepare(std::span<const TensorView> side) const override {
    std::lock_guard lock(mutex_);
    if (prepared_) return;
    if (refuse_) throw Error(ErrorCode::QuantTensorsInconsistent, "refused on purpose", {}, side_[0].tensor.name);
    EXPECT_EQ(side.size(), 1u);
    EXPECT_EQ(side[0].dtype(), DType::F32);
    scale_.assign(side[0].data<float>(), side[0].data<float>() + n_);
    ++taken_;
    prepared_ = true;
  }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    if (!prepared_) throw Error(ErrorCode::InvalidArgument, "a block decoded before its side tensors came");
    auto* out = static_cast<float*>(dst);
    for (uint64_t i = 0; i < nblocks * n_; ++i) out[i] = float(uint8_t(src[i])) * scale_[i % n_];
  }
  int taken() const { return taken_; }

 private:
  uint64_t n_;
  std::vector<SideRead> side_;
  bool refuse_;
  mutable std::mutex mutex_;
  mutable std::atomic<bool> prepared_{false};
  mutable int taken_ = 0;
  mutable std::vector<float> scale_;
};

// scale_k | q_k per layer, back to back; or every q_k, then 4 KiB further on every scale_k.
enum class Layout { Interleaved, Apart };

constexpr uint64_t kLayers = 8, kN = 96;

float scale_of(uint64_t layer, uint64_t i) { return 0.25f * float(layer + 1) + 0.125f * float(i % 5); }  // exact in F16
uint8_t q_of(uint64_t layer, uint64_t i) { return uint8_t(layer * 31 + i * 7); }

struct Checkpoint {
  std::unique_ptr<WeightSource> source;
  std::vector<std::shared_ptr<const Scaled>> decoders;
  std::shared_ptr<std::atomic<uint64_t>> requests = std::make_shared<std::atomic<uint64_t>>(0);
};

// kLayers dense tensors "w<k>" over a memory "file"; counted: requests through a counting source
// (no mapping), else the memory source itself (mapped).
Checkpoint checkpoint(Layout layout, bool counted, int refusing_layer = -1) {
  std::string bytes(kLayers * kN * 3 + 4096, '\0');
  Checkpoint c;
  std::vector<TensorInfo> tensors;
  for (uint64_t k = 0; k < kLayers; ++k) {
    const uint64_t q_at = layout == Layout::Interleaved ? k * kN * 3 + kN * 2 : k * kN;
    const uint64_t s_at = layout == Layout::Interleaved ? k * kN * 3 : kLayers * kN + 4096 + k * kN * 2;
    std::vector<float> s(kN);
    for (uint64_t i = 0; i < kN; ++i) s[i] = scale_of(k, i), bytes[q_at + i] = char(q_of(k, i));
    convert(DType::F32, s.data(), DType::F16, bytes.data() + s_at, kN);
    TensorInfo scale;
    scale.name = "w" + std::to_string(k) + ".scale", scale.dtype = DType::F16, scale.shape = {kN};
    scale.offset = s_at, scale.nbytes = kN * 2;
    auto d = std::make_shared<const Scaled>(kN, scale, int(k) == refusing_layer);
    TensorInfo w;
    w.name = "w" + std::to_string(k), w.dtype = DType::F32, w.shape = {kN}, w.offset = q_at, w.nbytes = kN;
    w.decoder = d;
    tensors.push_back(w);
    c.decoders.push_back(d);
  }
  auto opener = std::make_shared<MemoryOpener>();
  auto memory = memory_source("m.bin", MemoryRegion::of_string(std::move(bytes)));
  if (counted) opener->add(std::make_shared<test::CountedFile>(memory, *c.requests));
  else opener->add(memory);
  c.source = std::make_unique<WeightSource>("test", "m.bin", Catalogue{{"m.bin"}, std::move(tensors), {}}, opener);
  return c;
}

// Every layer read into F32 (or `dtype`); the values checked against q · scale.
ReadStats read_every_layer(const WeightSource& source, IoOptions io, DType dtype = DType::F32) {
  std::vector<TensorView> out;
  std::vector<ReadRequest> requests;
  for (const TensorInfo& t : source.tensors()) {
    out.push_back(TensorView::empty(dtype, t.shape));
    requests.push_back({&t, {}, dtype, out.back().raw()});
  }
  const ReadStats stats = source.read_all(requests, io);
  for (uint64_t k = 0; k < kLayers; ++k) {
    std::vector<float> got(kN);
    convert(dtype, out[k].raw(), DType::F32, got.data(), kN);
    for (uint64_t i = 0; i < kN; ++i) {
      const float exact = float(q_of(k, i)) * scale_of(k, i);  // then rounded once to `dtype`
      uint32_t rounded = 0;
      float want = 0;
      convert(DType::F32, &exact, dtype, &rounded, 1);
      convert(dtype, &rounded, DType::F32, &want, 1);
      EXPECT_EQ(got[i], want) << "w" << k << "[" << i << "]";
    }
  }
  return stats;
}

TEST(SideReads, EveryBlockIsDecodedAfterItsSideTensorsInEveryLayoutModeAndThreadCount) {
  for (Layout layout : {Layout::Interleaved, Layout::Apart})
    for (IoMode mode : {IoMode::Pread, IoMode::Mmap, IoMode::Direct})
      for (unsigned threads : {1u, 4u})
        for (DType dtype : {DType::F32, DType::BF16}) {
          SCOPED_TRACE(::testing::Message() << "layout " << int(layout) << ", " << io_mode_name(mode) << ", " << threads
                                            << " threads, into " << dtype_name(dtype));
          Checkpoint c = checkpoint(layout, mode == IoMode::Pread);
          IoOptions io;
          io.mode = mode == IoMode::Direct ? IoMode::Pread : mode;  // a memory source has no O_DIRECT
          io.concurrency = threads;
          io.chunk_bytes = 64;  // every block its own chunk
          read_every_layer(*c.source, io, dtype);
          for (const auto& d : c.decoders) EXPECT_EQ(d->taken(), 1);
        }
}

TEST(SideReads, SideTensorsBesideTheDataAreOneRequestWithIt) {
  IoOptions io;
  io.concurrency = 1;
  io.mode = IoMode::Pread;
  // scale_k | q_k for every layer, back to back: all of it one request (it was 16: 8 weights, 8 scales).
  Checkpoint interleaved = checkpoint(Layout::Interleaved, true);
  const ReadStats first = read_every_layer(*interleaved.source, io);
  EXPECT_EQ(interleaved.requests->load(), 1u);
  EXPECT_EQ(first.bytes_read, kLayers * kN * 3);  // the scales counted too
  // A later read has no side tensors to read: only the weights, apart from one another.
  const ReadStats again = read_every_layer(*interleaved.source, io);
  EXPECT_EQ(again.bytes_read, kLayers * kN);
  EXPECT_EQ(interleaved.requests->load(), 1u + kLayers);
  // Every weight, then apart from them every scale: two requests (it was 16).
  Checkpoint apart = checkpoint(Layout::Apart, true);
  read_every_layer(*apart.source, io);
  EXPECT_EQ(apart.requests->load(), 2u);
}

TEST(SideReads, OneTensorLoadedAloneReadsItsSideTensorsWithIt) {
  Checkpoint c = checkpoint(Layout::Interleaved, true);
  const TensorView w = c.source->load(c.source->at("w3"), DType::F32);
  EXPECT_EQ(c.requests->load(), 1u);
  EXPECT_EQ(c.decoders[3]->taken(), 1);
  EXPECT_EQ(c.decoders[2]->taken(), 0);
  for (uint64_t i = 0; i < kN; ++i) EXPECT_EQ(w.data<float>()[i], float(q_of(3, i)) * scale_of(3, i));
  // A slice of it (a tensor-parallel rank's share of a one-block tensor) after a fresh start.
  Checkpoint d = checkpoint(Layout::Apart, true);
  std::vector<float> half(kN / 2);
  d.source->read(d.source->at("w5"), DType::F32, half.data(), Slice{0, kN / 2, kN});
  for (uint64_t i = 0; i < kN / 2; ++i) EXPECT_EQ(half[i], float(q_of(5, kN / 2 + i)) * scale_of(5, kN / 2 + i));
}

TEST(SideReads, ADecoderThatRefusesItsSideTensorsStopsTheLoadNamingThem) {
  for (Layout layout : {Layout::Interleaved, Layout::Apart})
    for (unsigned threads : {1u, 4u}) {
      Checkpoint c = checkpoint(layout, true, 5);
      IoOptions io;
      io.concurrency = threads;
      io.chunk_bytes = 64;
      try {
        read_every_layer(*c.source, io);
        ADD_FAILURE() << "the load went on";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::QuantTensorsInconsistent);
        EXPECT_EQ(e.tensor(), "w5.scale");
        EXPECT_EQ(e.file(), "m.bin");  // the decoder names the tensor; the read, which holds the catalogue's files, names its file
      }
    }
}

}  // namespace
}  // namespace wl
