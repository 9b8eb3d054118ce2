// Formats and loaders added without static initialisation: a FormatList and a registry made and
// passed by the caller, while the global ones stay as they are.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"
#include "weightloader/format.hpp"
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
            t.file = source.name();
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
  auto formats = std::make_shared<FormatList>(FormatList::global());
  formats->add(toy_format());
  auto registry = WeightLoaderRegistry::with_builtins(formats);
  auto loader = registry->create("local");
  auto source = loader->get_weights(path);
  EXPECT_EQ(source->format(), "toy");
  Model model = loader->mirror_model(*source);
  loader->load_weights(model, *source);
  EXPECT_EQ(model.find("toy")->data.data<float>()[2], 3.5f);
  // The global registry and formats never saw it.
  test::expect_error(ErrorCode::UnknownFormat, [&] { WeightLoaderRegistry::global().create("local")->get_weights(path); });
  EXPECT_EQ(FormatList::global().find("toy"), nullptr);
  EXPECT_EQ(detect_loader(dir.path().string(), *default_opener(), *formats).kwargs.at("file_pattern"), KwValue(std::string("*.toy")));
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
  a->register_loader("mine", {"a test loader", {}, [](const Kwargs&) { return WeightLoaderRegistry::global().create("local"); }});
  EXPECT_TRUE(a->contains("mine"));
  EXPECT_FALSE(WeightLoaderRegistry::global().contains("mine"));
  test::expect_error(ErrorCode::LoaderExists, [&] { a->register_loader("mine", {"again", {}, [](const Kwargs&) { return WeightLoaderRegistry::global().create("local"); }}); });
}

TEST(Injectable, ALoaderReadsThroughTheOpenerItIsGiven) {
  test::TempDir dir;
  const std::string bytes = test::read_bytes(toy_file(dir));
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("in-memory/w.toy", MemoryRegion::of_string(bytes));
  auto formats = std::make_shared<FormatList>();
  formats->add(toy_format());
  auto loader = WeightLoaderRegistry::with_builtins(formats)->create("local", {{"file_pattern", std::string("*.toy")}});
  loader->options().opener = memory;
  auto source = loader->get_weights("in-memory");
  EXPECT_EQ(source->load(source->at("toy")).data<float>()[0], 1.5f);
}

}  // namespace
}  // namespace wl
