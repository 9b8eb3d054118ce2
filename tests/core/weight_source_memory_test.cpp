// WeightSource::from_memory: tensors that already live in memory, loaded into a model by the
// default load_weights exactly as a file's would be (names, conversion, strides, shards,
// strictness, zero copy, the report and the I/O modes).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

using test::expect_error;

constexpr const char* kLabel = "<memory:test>";

std::vector<float> ramp(size_t n, float start = 0, float step = 0.25f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * float(i);
  return v;
}

// A memory tensor over `data` (which the caller keeps alive).
template <typename T>
MemoryTensor tensor(std::string name, DType dtype, Shape shape, const std::vector<T>& data, std::vector<int64_t> strides = {}) {
  return MemoryTensor{std::move(name), dtype, std::move(shape), std::move(strides), data.data(), nullptr};
}

std::unique_ptr<WeightLoader> local_loader() { return WeightLoaderRegistry::with_builtins()->create("local"); }

template <typename T>
std::vector<T> values_of(const Parameter& p) {
  const T* d = p.data.data<T>();
  return std::vector<T>(d, d + p.data.numel());
}

TEST(WeightSourceMemory, DescribesItsTensors) {
  const std::vector<float> w = ramp(6);
  const std::vector<uint16_t> h(3, 0x3c00);
  auto source = WeightSource::from_memory(kLabel, {tensor("w", DType::F32, {2, 3}, w), tensor("h", DType::F16, {3}, h)},
                                          {{"note", "from a caller"}});
  EXPECT_EQ(source->format(), "memory");
  EXPECT_EQ(source->origin(), kLabel);
  EXPECT_EQ(source->metadata().at("note"), "from a caller");
  ASSERT_EQ(source->tensors().size(), 2u);
  EXPECT_EQ(source->at("w").shape, (Shape{2, 3}));
  EXPECT_EQ(source->at("w").nbytes, 24u);
  EXPECT_EQ(source->at("h").nbytes, 6u);
  EXPECT_EQ(source->total_bytes(), 30u);
  EXPECT_NE(source->file_of(source->at("w")).find(kLabel), std::string::npos);
  EXPECT_NE(source->file_of(source->at("w")), source->file_of(source->at("h")));  // each tensor its own region
  EXPECT_TRUE(source->at("w").strides.empty());
  // Read straight back.
  std::vector<float> out(6);
  source->read(source->at("w"), DType::F32, out.data());
  EXPECT_EQ(out, w);
}

TEST(WeightSourceMemory, LoadsIntoAModelWithNameMappingAndReport) {
  const std::vector<float> q = ramp(12, 1), b = ramp(4, -1);
  auto source = WeightSource::from_memory(
      kLabel, {tensor("model.q.weight", DType::F32, {4, 3}, q), tensor("model.q.bias", DType::F32, {4}, b)});
  auto loader = local_loader();
  loader->options().names.strip_prefix("model.");
  Model m;
  m.add_parameter("q.weight", {4, 3}, DType::F32);
  m.add_parameter("q.bias", {4}, DType::F32);
  const LoadReport r = loader->load_weights(m, *source);
  EXPECT_EQ(values_of<float>(*m.find("q.weight")), q);
  EXPECT_EQ(values_of<float>(*m.find("q.bias")), b);
  EXPECT_EQ(r.source, kLabel);
  EXPECT_EQ(r.format, "memory");
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"q.weight", "q.bias"}));
  EXPECT_TRUE(r.converted.empty());
  EXPECT_TRUE(r.missing.empty());
  EXPECT_TRUE(r.unexpected.empty());
  EXPECT_EQ(r.bytes_written, uint64_t(16 * 4));
  EXPECT_EQ(r.bytes_read, uint64_t(16 * 4));
  // mirror_model sees the mapped names too.
  const Model mirror = loader->mirror_model(*source);
  ASSERT_NE(mirror.find("q.weight"), nullptr);
  EXPECT_EQ(mirror.find("q.weight")->shape(), (Shape{4, 3}));
}

TEST(WeightSourceMemory, ConvertsExactlyOnTheWay) {
  // F32 values including ones BF16 must round (ties to even), and F16 values of every kind.
  std::vector<float> f32 = ramp(64, -8, 0.3333f);
  f32.push_back(1.00390625f);  // halfway between two BF16 values
  f32.push_back(-0.0f);
  std::vector<uint16_t> f16 = {0x0000, 0x8000, 0x0001, 0x03ff, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00, 0x3555};
  auto source = WeightSource::from_memory(
      kLabel, {tensor("a", DType::F32, {f32.size()}, f32), tensor("h", DType::F16, {f16.size()}, f16)});
  Model m;
  m.add_parameter("a", {f32.size()}, DType::BF16);
  m.add_parameter("h", {f16.size()}, DType::F32);
  for (IoMode mode : {IoMode::Auto, IoMode::Pread}) {
    auto loader = local_loader();
    loader->options().io.mode = mode;
    const LoadReport r = loader->load_weights(m, *source);
    const std::vector<uint16_t> a = values_of<uint16_t>(*m.find("a"));
    for (size_t i = 0; i < f32.size(); ++i) ASSERT_EQ(a[i], f32_to_bf16_bits(f32[i])) << i;
    const std::vector<float> h = values_of<float>(*m.find("h"));
    for (size_t i = 0; i < f16.size(); ++i) {
      const float want = f16_bits_to_f32(f16[i]);
      ASSERT_EQ(std::memcmp(&h[i], &want, 4), 0) << i;  // bit for bit, signed zero included
    }
    ASSERT_EQ(r.converted.size(), 2u);
    EXPECT_EQ(r.converted[0].name, "a");
    EXPECT_EQ(r.converted[0].from, "F32");
    EXPECT_EQ(r.converted[0].to, DType::BF16);
    EXPECT_EQ(r.converted[1].name, "h");
    EXPECT_EQ(r.converted[1].from, "F16");
    EXPECT_EQ(r.converted[1].to, DType::F32);
  }
}

TEST(WeightSourceMemory, GathersStridedTensors) {
  // A 3x4 matrix stored column-major (a transposed view): element (i, j) at storage[i + 3 j].
  const std::vector<float> storage = ramp(12, 10, 1);
  // Rows padded to 6 elements: element (i, j) at padded[6 i + j].
  const std::vector<float> padded = ramp(6 * 2 + 4, 100, 1);
  auto source = WeightSource::from_memory(kLabel, {tensor("t", DType::F32, {3, 4}, storage, {1, 3}),
                                                   tensor("p", DType::F32, {3, 4}, padded, {6, 1}),
                                                   tensor("c", DType::F32, {3, 4}, storage, {4, 1})});
  EXPECT_FALSE(source->at("t").strides.empty());
  EXPECT_EQ(source->at("p").nbytes, (2 * 6 + 3 + 1) * 4u);  // from the first element to the last
  EXPECT_TRUE(source->at("c").strides.empty());             // row-major strides are contiguous
  Model m;
  m.add_parameter("t", {3, 4}, DType::F32);
  m.add_parameter("p", {3, 4}, DType::BF16);
  m.add_parameter("c", {3, 4}, DType::F32);
  auto loader = local_loader();
  loader->load_weights(m, *source);
  const std::vector<float> t = values_of<float>(*m.find("t"));
  const std::vector<uint16_t> p = values_of<uint16_t>(*m.find("p"));
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(t[i * 4 + j], storage[i + 3 * j]) << i << "," << j;
      EXPECT_EQ(p[i * 4 + j], f32_to_bf16_bits(padded[6 * i + j])) << i << "," << j;
    }
  EXPECT_EQ(values_of<float>(*m.find("c")), storage);
  // A slice of a strided tensor: columns 1 and 2 of the transposed matrix.
  std::vector<float> cols(3 * 2);
  source->read(source->at("t"), DType::F32, cols.data(), Slice{1, 1, 3});
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 2; ++j) EXPECT_EQ(cols[i * 2 + j], storage[i + 3 * (j + 1)]);
}

TEST(WeightSourceMemory, TensorParallelShards) {
  // Column-parallel q (rows split across 2 ranks), row-parallel o (columns split).
  const std::vector<float> q = ramp(4 * 3, 0, 1), o = ramp(3 * 4, 100, 1);
  auto source = WeightSource::from_memory(kLabel, {tensor("q.weight", DType::F32, {4, 3}, q), tensor("o.weight", DType::F32, {3, 4}, o)});
  for (uint64_t rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    Model m;
    m.add_parameter("q", {2, 3}, DType::F32, {{"q.weight", Slice{0, rank * 2, rank * 2 + 2}, 0}});
    m.add_parameter("o", {3, 2}, DType::BF16, {{"o.weight", Slice{1, rank * 2, rank * 2 + 2}, 0}});
    auto loader = local_loader();
    const LoadReport r = loader->load_weights(m, *source);
    EXPECT_EQ(values_of<float>(*m.find("q")), std::vector<float>(q.begin() + long(rank * 6), q.begin() + long(rank * 6 + 6)));
    const std::vector<uint16_t> got = values_of<uint16_t>(*m.find("o"));
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 2; ++j) EXPECT_EQ(got[i * 2 + j], f32_to_bf16_bits(o[i * 4 + rank * 2 + j]));
    EXPECT_EQ(r.loaded, (std::vector<std::string>{"q", "o"}));
    EXPECT_EQ(r.bytes_written, uint64_t(6 * 4 + 6 * 2));
  }
  // Stacked: both halves of q into one parameter, in the other order.
  Model stacked;
  stacked.add_parameter("q_swapped", {4, 3}, DType::F32, {{"q.weight", Slice{0, 2, 4}, 0}, {"q.weight", Slice{0, 0, 2}, 2}});
  stacked.add_parameter("o.weight", {3, 4}, DType::F32);
  local_loader()->load_weights(stacked, *source);
  std::vector<float> swapped(q.begin() + 6, q.end());
  swapped.insert(swapped.end(), q.begin(), q.begin() + 6);
  EXPECT_EQ(values_of<float>(*stacked.find("q_swapped")), swapped);
  EXPECT_EQ(values_of<float>(*stacked.find("o.weight")), o);
  // A shard whose rows are not the parameter's: o's rows are 4 wide, not 3.
  Model bad;
  bad.add_parameter("q_bad", {4, 3}, DType::F32, {{"q.weight", Slice{0, 2, 4}, 0}, {"o.weight", Slice{0, 0, 2}, 2}});
  const std::string msg = expect_error(ErrorCode::ShapeMismatch, [&] { local_loader()->load_weights(bad, *source); });
  EXPECT_NE(msg.find("o.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find(kLabel), std::string::npos) << msg;
}

TEST(WeightSourceMemory, StrictLoadsNameWhatIsMissingAndUnexpected) {
  const std::vector<float> a = ramp(2), extra = ramp(3);
  auto source = WeightSource::from_memory(kLabel, {tensor("a", DType::F32, {2}, a), tensor("extra", DType::F32, {3}, extra)});
  {
    Model m;
    m.add_parameter("a", {2}, DType::F32);
    m.add_parameter("absent", {5}, DType::F32);
    m.add_parameter("extra", {3}, DType::F32);
    try {
      local_loader()->load_weights(m, *source);
      ADD_FAILURE() << "a strict load with a missing parameter succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::MissingParameters) << e.what();
      EXPECT_EQ(e.file(), kLabel);
      EXPECT_NE(e.message().find("absent"), std::string::npos) << e.what();
    }
  }
  {
    Model m;
    m.add_parameter("a", {2}, DType::F32);
    try {
      local_loader()->load_weights(m, *source);
      ADD_FAILURE() << "a strict load with an unexpected tensor succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::UnexpectedTensors) << e.what();
      EXPECT_EQ(e.file(), kLabel);
      EXPECT_NE(e.message().find("extra"), std::string::npos) << e.what();
    }
    auto loose = local_loader();
    loose->options().strict = false;
    const LoadReport r = loose->load_weights(m, *source);
    EXPECT_EQ(r.loaded, std::vector<std::string>{"a"});
    EXPECT_EQ(r.unexpected, std::vector<std::string>{"extra"});
    EXPECT_EQ(values_of<float>(*m.find("a")), a);
  }
  {
    Model m;
    m.add_parameter("a", {3}, DType::F32);  // the wrong shape
    m.add_parameter("extra", {3}, DType::F32);
    const std::string msg = expect_error(ErrorCode::ShapeMismatch, [&] { local_loader()->load_weights(m, *source); });
    EXPECT_NE(msg.find(kLabel), std::string::npos) << msg;
  }
}

TEST(WeightSourceMemory, ZeroCopyBacksParametersByTheCallersMemory) {
  auto buffer = std::make_shared<std::vector<float>>(ramp(8 * 4, 3));
  const std::weak_ptr<std::vector<float>> watch = buffer;
  const float* data = buffer->data();
  const std::vector<float> other = ramp(4);
  std::optional<Model> model(std::in_place);
  {
    std::vector<MemoryTensor> tensors;
    tensors.push_back({"w", DType::F32, {8, 4}, {}, data, buffer});
    tensors.push_back(tensor("v", DType::F32, {4}, other));
    buffer.reset();
    auto source = WeightSource::from_memory(kLabel, std::move(tensors));
    model->add_parameter("w", {8, 4}, DType::F32);
    model->add_parameter("v", {4}, DType::BF16);  // needs converting: copied
    auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"zero_copy", true}});
    const LoadReport r = loader->load_weights(*model, *source);
    EXPECT_EQ(r.zero_copy, std::vector<std::string>{"w"});
    EXPECT_EQ(r.loaded, (std::vector<std::string>{"w", "v"}));
    EXPECT_EQ(r.bytes_read, 4 * 4u);  // only v was read
    EXPECT_EQ(model->find("w")->data.data<float>(), data);
    EXPECT_FALSE(model->find("w")->data.storage()->writable());
    EXPECT_EQ(model->find("v")->data.data<uint16_t>()[3], f32_to_bf16_bits(other[3]));
  }
  // The source and the loader are gone; the parameter still holds the caller's memory.
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(model->find("w")->data.data<float>()[31], 3 + 0.25f * 31);
  model.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(WeightSourceMemory, ZeroCopySkipsStridedTensors) {
  const std::vector<float> storage = ramp(6, 1, 1);
  auto source = WeightSource::from_memory(kLabel, {tensor("t", DType::F32, {2, 3}, storage, {1, 2})});
  Model m;
  m.add_parameter("t", {2, 3}, DType::F32);
  auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"zero_copy", true}});
  const LoadReport r = loader->load_weights(m, *source);
  EXPECT_TRUE(r.zero_copy.empty());
  EXPECT_EQ(values_of<float>(*m.find("t")), (std::vector<float>{1, 3, 5, 2, 4, 6}));
  EXPECT_TRUE(m.find("t")->data.storage()->writable());
}

TEST(WeightSourceMemory, ZeroCopyOfEmptyAndScalarTensors) {
  const std::vector<float> one = {7.25f};
  auto source = WeightSource::from_memory(
      kLabel, {MemoryTensor{"empty", DType::F32, {0, 4}, {}, nullptr, nullptr}, tensor("s", DType::F32, {}, one)});
  Model m;
  m.add_parameter("empty", {0, 4}, DType::F32);
  m.add_parameter("s", {}, DType::F32);
  auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"zero_copy", true}});
  const LoadReport r = loader->load_weights(m, *source);
  EXPECT_EQ(r.zero_copy, (std::vector<std::string>{"empty", "s"}));
  EXPECT_EQ(r.bytes_read, 0u);
  EXPECT_EQ(m.find("s")->data.data<float>(), one.data());
  EXPECT_EQ(m.find("empty")->data.shape(), (Shape{0, 4}));
}

TEST(WeightSourceMemory, ANullAddressForElementsIsRefusedNamingTheTensor) {
  try {
    WeightSource::from_memory(kLabel, {MemoryTensor{"lost", DType::F32, {3}, {}, nullptr, nullptr}});
    ADD_FAILURE() << "accepted 3 elements at a null address";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("lost"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(kLabel), std::string::npos) << e.what();
  }
}

TEST(WeightSourceMemory, BadStridesAreInvalidArgumentsNamingTheTensor) {
  const std::vector<float> data = ramp(12);
  struct Bad {
    const char* what;
    Shape shape;
    std::vector<int64_t> strides;
  };
  for (const Bad& bad : {Bad{"negative", {3, 4}, {4, -1}}, Bad{"negative first", {3, 4}, {-4, 1}},
                         Bad{"too few", {3, 4}, {1}}, Bad{"too many", {12}, {1, 1}}, Bad{"for a scalar", {}, {1}}}) {
    SCOPED_TRACE(bad.what);
    try {
      WeightSource::from_memory(kLabel, {tensor("ok", DType::F32, {2}, data), tensor("bent", DType::F32, bad.shape, data, bad.strides)});
      ADD_FAILURE() << "accepted strides";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_EQ(e.file(), kLabel);
      EXPECT_EQ(e.tensor(), "bent");
    }
  }
}

TEST(WeightSourceMemory, EmptyScalarAndDuplicateTensors) {
  const std::vector<float> one = {42.5f};
  auto source = WeightSource::from_memory(
      kLabel, {MemoryTensor{"empty", DType::F32, {0, 3}, {}, nullptr, nullptr},
               MemoryTensor{"empty_strided", DType::F32, {3, 0}, {1, 3}, nullptr, nullptr}, tensor("s", DType::F32, {}, one)});
  EXPECT_EQ(source->at("empty").nbytes, 0u);
  EXPECT_EQ(source->at("empty_strided").nbytes, 0u);
  Model m;
  m.add_parameter("empty", {0, 3}, DType::BF16);
  m.add_parameter("empty_strided", {3, 0}, DType::F32);
  m.add_parameter("s", {}, DType::F64);
  const LoadReport r = local_loader()->load_weights(m, *source);
  EXPECT_EQ(r.loaded.size(), 3u);
  EXPECT_EQ(m.find("s")->data.data<double>()[0], 42.5);
  EXPECT_EQ(r.bytes_read, 4u);
  // Two tensors of one name.
  try {
    WeightSource::from_memory(kLabel, {tensor("x", DType::F32, {1}, one), tensor("x", DType::F32, {1}, one)});
    ADD_FAILURE() << "accepted a name twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DuplicateTensorName) << e.what();
    EXPECT_EQ(e.file(), kLabel);
    EXPECT_EQ(e.tensor(), "x");
  }
}

TEST(WeightSourceMemory, IoModes) {
  const std::vector<float> w = ramp(256, -5);
  const std::vector<float> t = ramp(6, 1, 1);
  auto source = WeightSource::from_memory(kLabel, {tensor("w", DType::F32, {16, 16}, w), tensor("t", DType::F32, {2, 3}, t, {1, 2})});
  const auto load = [&](IoMode mode, LoadReport* report = nullptr) {
    Model m;
    m.add_parameter("w", {16, 16}, DType::F32);
    m.add_parameter("t", {2, 3}, DType::F32);
    auto loader = local_loader();
    loader->options().io.mode = mode;
    loader->options().io.chunk_bytes = 100;  // several chunks
    loader->options().io.concurrency = 2;
    const LoadReport r = loader->load_weights(m, *source);
    if (report) *report = r;
    EXPECT_EQ(values_of<float>(*m.find("w")), w);
    EXPECT_EQ(values_of<float>(*m.find("t")), (std::vector<float>{1, 3, 5, 2, 4, 6}));
  };
  LoadReport r;
  load(IoMode::Auto, &r);
  EXPECT_EQ(r.io_mode, "mmap");
  EXPECT_FALSE(r.io_mode_reason.empty());
  load(IoMode::Pread, &r);
  EXPECT_EQ(r.io_mode, "pread");
  EXPECT_EQ(r.bytes_read, source->total_bytes());
  load(IoMode::Mmap, &r);
  EXPECT_EQ(r.io_mode, "mmap");
  // No O_DIRECT for memory: an Io error naming the source.
  Model m;
  m.add_parameter("w", {16, 16}, DType::F32);
  m.add_parameter("t", {2, 3}, DType::F32);
  auto loader = local_loader();
  loader->options().io.mode = IoMode::Direct;
  try {
    loader->load_weights(m, *source);
    ADD_FAILURE() << "direct reads of memory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io) << e.what();
    EXPECT_TRUE(e.file() == source->file_of(source->at("w")) || e.file() == source->file_of(source->at("t"))) << e.what();
    EXPECT_NE(e.file().find(kLabel), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wl
