// Formats and loaders added without static initialisation: a FormatList and a registry made and
// passed by the caller (there is no process-wide one), and a call's context that wins over the
// loader's for that call only.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// "TOY1", then u32 n, then n little-endian floats: one tensor named "toy".
FileFormat toy_format() {
  return {"toy",
          [](std::span<const std::byte> head, uint64_t) { return head.size() >= 4 && std::memcmp(head.data(), "TOY1", 4) == 0; },
          [](const ByteSource& source, const Opener&) {
            uint32_t n = 0;
            source.read_exact(4, &n, 4);
            if (8 + uint64_t(n) * 4 != source.size())
              throw Error(ErrorCode::Truncated, "toy: size does not match its count", source.name());
            Catalogue c;
            TensorInfo t;
            t.name = "toy";
            t.shape = {n};
            c.files = {source.name()};  // the tensor's file: index 0
            t.offset = 8;
            t.nbytes = uint64_t(n) * 4;
            c.tensors.push_back(t);
            return c;
          }};
}

std::string toy_file(const test::TempDir& dir) {
  std::string bytes = "TOY1";
  const uint32_t n = 3;
  bytes.append(reinterpret_cast<const char*>(&n), 4);
  for (float v : {1.5f, 2.5f, 3.5f}) bytes.append(reinterpret_cast<const char*>(&v), 4);
  test::write_bytes(dir.file("w.toy"), bytes);
  return dir.file("w.toy");
}

TEST(Injectable, AFormatListPassedToARegistryIsWhatItsLoadersDetect) {
  test::TempDir dir;
  const std::string path = toy_file(dir);
  auto formats = std::make_shared<FormatList>(builtin_formats());
  formats->add(toy_format());
  Context context;
  context.formats = formats;
  auto registry = WeightLoaderRegistry::with_builtins(context);
  auto loader = registry->create("local");
  auto source = loader->get_weights(path);
  EXPECT_EQ(source->format(), "toy");
  Model model = loader->mirror_model(*source);
  loader->load_weights(model, *source);
  EXPECT_EQ(model.find("toy")->data.data<float>()[2], 3.5f);
  // Another registry and the built-in formats never saw it.
  test::expect_error(ErrorCode::UnknownFormat, [&] { WeightLoaderRegistry::with_builtins()->create("local")->get_weights(path); });
  EXPECT_EQ(builtin_formats().find("toy"), nullptr);
  EXPECT_EQ(detect_loader(dir.path().string(), *local_opener(), *formats).kwargs.at("file_pattern"), KwValue(std::string("*.toy")));
}

TEST(Injectable, GetWeightsUnderACallsContextLeavesTheLoaderAsItWas) {
  test::TempDir dir;
  const std::string path = toy_file(dir);
  auto formats = std::make_shared<FormatList>(builtin_formats());
  formats->add(toy_format());
  const std::unique_ptr<const WeightLoader> loader = WeightLoaderRegistry::with_builtins()->create("local");
  LoadOptions call = loader->options();
  call.context.formats = formats;
  bool asked = false;
  call.io.progress = [&](uint64_t, uint64_t) { return asked = true; };
  auto source = loader->get_weights(path, call);
  EXPECT_EQ(source->format(), "toy");
  Model model = loader->mirror_model(*source);
  loader->load_weights(model, *source, call);
  EXPECT_TRUE(asked);
  EXPECT_EQ(model.find("toy")->data.data<float>()[1], 2.5f);
  // The loader's own options were not touched: under them the toy format is unknown.
  EXPECT_EQ(loader->options().context.formats, nullptr);
  EXPECT_FALSE(loader->options().io.progress);
  test::expect_error(ErrorCode::UnknownFormat, [&] { loader->get_weights(path); });
}

TEST(Injectable, AFormatNameIsTakenOnce) {
  FormatList formats;
  formats.add(toy_format());
  test::expect_error(ErrorCode::InvalidArgument, [&] { formats.add(toy_format()); });
  EXPECT_EQ(formats.formats().size(), 1u);
}

TEST(Injectable, RegistriesAreIndependent) {
  auto a = WeightLoaderRegistry::with_builtins();
  WeightLoaderRegistry empty;
  EXPECT_TRUE(empty.list_available().empty());
  a->register_loader("mine", {"a test loader", {}, [](const Kwargs&) { return WeightLoaderRegistry::with_builtins()->create("local"); }});
  EXPECT_TRUE(a->contains("mine"));
  EXPECT_FALSE(WeightLoaderRegistry::with_builtins()->contains("mine"));
  test::expect_error(ErrorCode::LoaderExists, [&] { a->register_loader("mine", {"again", {}, [](const Kwargs&) { return WeightLoaderRegistry::with_builtins()->create("local"); }}); });
}

TEST(Injectable, ALoaderReadsThroughTheOpenerItIsGiven) {
  test::TempDir dir;
  const std::string bytes = test::read_bytes(toy_file(dir));
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("in-memory/w.toy", MemoryRegion::of_string(bytes));
  auto formats = std::make_shared<FormatList>();
  formats->add(toy_format());
  Context context;
  context.formats = formats;
  auto loader = WeightLoaderRegistry::with_builtins(context)->create("local", {{"file_pattern", std::string("*.toy")}});
  loader->options().context.opener = memory;
  auto source = loader->get_weights("in-memory");
  EXPECT_EQ(source->load(source->at("toy")).data<float>()[0], 1.5f);
}

// Contexts, not process-wide slots: two loaders in one process, each given its own opener for the
// same scheme, read their own bytes under one name; a loader given none knows no scheme.
TEST(Injectable, EachLoaderReadsThroughItsOwnContext) {
  test::TempDir dir;
  auto context_holding = [&](float value) {
    TensorView t = TensorView::empty(DType::F32, {2});
    t.data<float>()[0] = t.data<float>()[1] = value;
    write_safetensors(dir.file("w.safetensors"), {{"w", t}});
    auto memory = std::make_shared<MemoryOpener>();
    memory->add("mem://m/w.safetensors", MemoryRegion::of_string(test::read_bytes(dir.file("w.safetensors"))));
    auto opener = std::make_shared<SchemeOpener>();
    opener->add("mem", memory);
    Context context;
    context.opener = opener;
    return context;
  };
  const Context one = context_holding(1.0f), two = context_holding(2.0f);
  auto a = WeightLoaderRegistry::with_builtins()->create("local");
  a->options().context = one;
  auto b = WeightLoaderRegistry::with_builtins(two)->create("local");
  for (auto [loader, expected] : {std::pair{a.get(), 1.0f}, std::pair{b.get(), 2.0f}}) {
    auto source = loader->get_weights("mem://m/w.safetensors");
    EXPECT_EQ(source->load(source->at("w")).data<float>()[1], expected);
  }
  const std::string message = test::expect_error(ErrorCode::InvalidArgument, [] {
    WeightLoaderRegistry::with_builtins()->create("local")->get_weights("mem://m/w.safetensors");
  });
  EXPECT_NE(message.find("mem://m/w.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("no byte source for 'mem://'"), std::string::npos) << message;
}

}  // namespace
}  // namespace wl
