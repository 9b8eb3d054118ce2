// Memory regions as byte sources, a tree of them as an opener, and whole checkpoints (safetensors,
// the custom binary format, a split GGUF) opened from memory through the same readers as files.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf/gguf_test_util.hpp"
#include "test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

using test::expect_error;

std::string text_of(const ByteSource& s, uint64_t offset, uint64_t length) {
  std::string out(length, '\0');
  out.resize(s.read_up_to(offset, out.data(), length));
  return out;
}

TensorView counting(DType dtype, Shape shape, float start) {
  TensorView f = TensorView::empty(DType::F32, std::move(shape));
  for (uint64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = start + 0.5f * float(i);
  return f.to(dtype);
}

std::vector<std::byte> bytes_of(const TensorView& t) { return std::vector<std::byte>(t.raw(), t.raw() + t.nbytes()); }

std::vector<float> floats_of(const TensorView& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// --- MemoryRegion ---

TEST(MemorySource, CopyOfKeepsItsOwnCopy) {
  std::string original = "weights!";
  const MemoryRegion r = MemoryRegion::copy_of(original.data(), original.size());
  original.assign("XXXXXXXX");
  ASSERT_EQ(r.size, 8u);
  ASSERT_NE(r.data, nullptr);
  EXPECT_NE(static_cast<const void*>(r.data), static_cast<const void*>(original.data()));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data), r.size), "weights!");
  EXPECT_NE(r.keep_alive, nullptr);
  const MemoryRegion empty = MemoryRegion::copy_of(nullptr, 0);
  EXPECT_EQ(empty.size, 0u);
}

TEST(MemorySource, OfStringOwnsTheString) {
  std::string bytes("a\0b\xff", 4);
  MemoryRegion r = MemoryRegion::of_string(bytes);
  bytes.clear();
  ASSERT_EQ(r.size, 4u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data), r.size), std::string("a\0b\xff", 4));
  // The bytes live as long as the region's keep_alive does, whatever happens to the region.
  std::shared_ptr<const void> hold = r.keep_alive;
  const std::byte* data = r.data;
  r = MemoryRegion{};
  EXPECT_EQ(std::memcmp(data, "a\0b\xff", 4), 0);
}

// --- memory_source ---

TEST(MemorySource, ReadsInsideAndAtTheEnd) {
  const auto s = memory_source("<memory>", MemoryRegion::of_string("0123456789"));
  EXPECT_EQ(s->name(), "<memory>");
  EXPECT_EQ(s->size(), 10u);
  EXPECT_EQ(s->current_size(), 10u);
  char buf[16] = {};
  EXPECT_EQ(s->read_some(3, buf, 4), 4u);
  EXPECT_EQ(std::string(buf, 4), "3456");
  EXPECT_EQ(s->read_some(7, buf, 16), 3u);  // only what is left
  EXPECT_EQ(std::string(buf, 3), "789");
  EXPECT_EQ(s->read_some(10, buf, 1), 0u);  // at the end
  EXPECT_EQ(s->read_some(11, buf, 1), 0u);  // after it
  EXPECT_EQ(s->read_some(1ull << 62, buf, 1), 0u);
  EXPECT_EQ(s->read_up_to(8, buf, 100), 2u);
  EXPECT_EQ(text_of(*s, 0, 100), "0123456789");
  EXPECT_EQ(s->read_string(2, 3), "234");
  s->read_exact(0, buf, 10);
  EXPECT_EQ(std::string(buf, 10), "0123456789");
}

TEST(MemorySource, ShortExactReadsAreTruncatedNamingTheLabel) {
  const auto s = memory_source("label:ckpt", MemoryRegion::of_string("0123456789"));
  char buf[16];
  for (const auto& [offset, length] : std::vector<std::pair<uint64_t, uint64_t>>{{5, 6}, {10, 1}, {100, 1}}) {
    try {
      s->read_exact(offset, buf, length);
      ADD_FAILURE() << "read [" << offset << ", " << offset + length << ") of 10 bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Truncated) << e.what();
      EXPECT_EQ(e.file(), "label:ckpt");
    }
  }
  expect_error(ErrorCode::Truncated, [&] { s->read_string(9, 2); });
}

TEST(MemorySource, IsItsOwnMappingAndAllResident) {
  const std::string bytes = "mapped bytes";
  const MemoryRegion region = MemoryRegion::copy_of(bytes.data(), bytes.size());
  const auto s = memory_source("m", region);
  EXPECT_EQ(s->mapping(), region.data);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(s->mapping()), s->size()), bytes);
  ASSERT_TRUE(s->resident_bytes().has_value());
  EXPECT_EQ(*s->resident_bytes(), bytes.size());
  EXPECT_EQ(s->kind(), SourceKind::Memory);
  EXPECT_FALSE(s->supports_direct());
  char buf[4096];
  const std::string msg = expect_error(ErrorCode::Io, [&] { s->read_direct(0, buf, sizeof buf); });
  EXPECT_NE(msg.find("m"), std::string::npos);
}

TEST(MemorySource, AnEmptyRegionIsAnEmptySource) {
  const auto s = memory_source("empty", MemoryRegion{});
  EXPECT_EQ(s->size(), 0u);
  char c;
  EXPECT_EQ(s->read_some(0, &c, 1), 0u);
  s->read_exact(0, &c, 0);
  EXPECT_EQ(*s->resident_bytes(), 0u);
}

TEST(MemorySource, ANullAddressWithBytesIsRefused) {
  try {
    memory_source("<bad>", MemoryRegion{nullptr, 16, nullptr});
    ADD_FAILURE() << "accepted a null region of 16 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(e.file(), "<bad>");
  }
}

TEST(MemorySource, KeepAliveIsReleasedWithTheLastHolder) {
  auto buffer = std::make_shared<std::vector<std::byte>>(64, std::byte{7});
  const std::weak_ptr<std::vector<std::byte>> watch = buffer;
  std::shared_ptr<ByteSource> s = memory_source("held", MemoryRegion{buffer->data(), buffer->size(), buffer});
  buffer.reset();
  ASSERT_FALSE(watch.expired());  // the source holds it
  std::shared_ptr<ByteSource> second = s;
  s.reset();
  EXPECT_FALSE(watch.expired());
  std::byte b{};
  second->read_exact(63, &b, 1);
  EXPECT_EQ(b, std::byte{7});
  second.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(MemorySource, KeepAliveOutlivesTheOpenerWhileASourceIsOpen) {
  auto buffer = std::make_shared<std::string>("abc");
  const std::weak_ptr<std::string> watch = buffer;
  std::shared_ptr<ByteSource> opened;
  {
    MemoryOpener opener;
    opener.add("f", MemoryRegion{reinterpret_cast<const std::byte*>(buffer->data()), buffer->size(), buffer});
    buffer.reset();
    opened = opener.open("f");
  }
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(opened->read_string(0, 3), "abc");
  opened.reset();
  EXPECT_TRUE(watch.expired());
}

// --- MemoryOpener ---

MemoryOpener tree() {
  MemoryOpener o;
  // Added out of order: listing sorts them.
  o.add("m/b.bin", MemoryRegion::of_string("B"));
  o.add("top.bin", MemoryRegion::of_string("T"));
  o.add("m/sub/c.bin", MemoryRegion::of_string("C"));
  o.add("m/a.bin", MemoryRegion::of_string("A"));
  o.add("mm/x", MemoryRegion::of_string("X"));
  return o;
}

TEST(MemoryOpener, OpensFilesByName) {
  const MemoryOpener o = tree();
  const auto a = o.open("m/a.bin");
  EXPECT_EQ(a->name(), "m/a.bin");
  EXPECT_EQ(a->read_string(0, 1), "A");
  EXPECT_EQ(o.open("m/sub/c.bin")->read_string(0, 1), "C");
  EXPECT_EQ(o.open("top.bin")->read_string(0, 1), "T");
  EXPECT_EQ(o.open("m/a.bin"), a);  // the same source each time
}

TEST(MemoryOpener, DirectoriesAreImpliedByNames) {
  const MemoryOpener o = tree();
  for (const char* name : {"m/a.bin", "m/sub/c.bin", "top.bin", "mm/x", "m", "m/sub", "mm"})
    EXPECT_TRUE(o.exists(name)) << name;
  for (const char* name : {"m/a", "m/s", "m/sub/c", "x", "top", "m/a.bin/x", "mm/x/y"}) EXPECT_FALSE(o.exists(name)) << name;
  for (const char* name : {"m", "m/sub", "mm", "m/", "."}) EXPECT_TRUE(o.is_directory(name)) << name;
  for (const char* name : {"m/a.bin", "top.bin", "mm/x", "m/s", "x"}) EXPECT_FALSE(o.is_directory(name)) << name;
}

TEST(MemoryOpener, ListsDirectChildrenSorted) {
  const MemoryOpener o = tree();
  EXPECT_EQ(o.list("m"), (std::vector<std::string>{"m/a.bin", "m/b.bin"}));
  EXPECT_EQ(o.list("m/sub"), (std::vector<std::string>{"m/sub/c.bin"}));
  EXPECT_EQ(o.list("mm"), (std::vector<std::string>{"mm/x"}));
  EXPECT_EQ(o.list("."), (std::vector<std::string>{"top.bin"}));
  EXPECT_EQ(o.list(""), (std::vector<std::string>{"top.bin"}));
  EXPECT_TRUE(o.list("nothing").empty());
}

// A directory named with a trailing slash is a directory (is_directory says so, as the local file
// system does) and lists the same files, so that a loader given "m/" finds the checkpoint in it.
TEST(MemoryOpener, ListsADirectoryNamedWithATrailingSlash) {
  const MemoryOpener o = tree();
  ASSERT_TRUE(o.is_directory("m/"));
  EXPECT_EQ(o.list("m/"), o.list("m"));
  EXPECT_EQ(o.list("m/sub/"), o.list("m/sub"));
  // The local file system agrees.
  test::TempDir dir;
  test::write_bytes(dir.file("a.bin"), "A");
  EXPECT_EQ(local_opener()->list(dir.path().string() + "/"), local_opener()->list(dir.path().string()));
  // And so a checkpoint directory given as "m/" opens from memory as it does from disk.
  write_safetensors(dir.file("model.safetensors"), {{"w", counting(DType::F32, {2}, 0)}});
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("m/model.safetensors", MemoryRegion::of_string(test::read_bytes(dir.file("model.safetensors"))));
  auto loader = WeightLoaderRegistry::with_builtins()->create("local");
  EXPECT_EQ(loader->get_weights(dir.path().string() + "/")->tensors().size(), 1u);
  loader->options().context.opener = memory;
  try {
    EXPECT_EQ(loader->get_weights("m/")->tensors().size(), 1u);
  } catch (const Error& e) {
    ADD_FAILURE() << "get_weights(\"m/\") from memory: " << e.what();
  }
}

TEST(MemoryOpener, AMissingNameIsFileNotFoundNamingIt) {
  const MemoryOpener o = tree();
  for (const char* name : {"m/missing.bin", "nope", "m/a"}) {
    try {
      o.open(name);
      ADD_FAILURE() << "opened " << name;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::FileNotFound) << e.what();
      EXPECT_EQ(e.file(), name);
    }
  }
  // A directory is not a file.
  try {
    o.open("m");
    ADD_FAILURE() << "opened a directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_EQ(e.file(), "m");
  }
  expect_error(ErrorCode::FileNotFound, [] { MemoryOpener().open("x"); });
}

TEST(MemoryOpener, TakesAnySourceUnderItsNameAndReplacesByName) {
  MemoryOpener o;
  o.add(memory_source("d/own.bin", MemoryRegion::of_string("own")));
  EXPECT_TRUE(o.exists("d/own.bin"));
  EXPECT_EQ(o.open("d/own.bin")->read_string(0, 3), "own");
  o.add("d/own.bin", MemoryRegion::of_string("new!"));
  EXPECT_EQ(o.open("d/own.bin")->size(), 4u);
  EXPECT_EQ(o.list("d"), std::vector<std::string>{"d/own.bin"});
}

TEST(MemoryOpener, JoinsAndParentsNames) {
  MemoryOpener o;
  EXPECT_EQ(o.join("a/b", "c.json"), "a/b/c.json");
  EXPECT_EQ(o.join(".", "c.json"), "c.json");
  EXPECT_EQ(o.parent("a/b/c.json"), "a/b");
  EXPECT_EQ(o.parent("c.json"), ".");
  EXPECT_EQ(o.resolved("a/../b"), "a/../b");
}

// --- whole checkpoints from memory ---

// A file written by one of the writers, as bytes.
std::string written(const std::string& path) { return test::read_bytes(path); }

TEST(MemoryOpener, OpensASafetensorsCheckpointFromMemory) {
  test::TempDir dir;
  const TensorView w = counting(DType::F32, {4, 5}, -3), b = counting(DType::BF16, {7}, 10);
  const std::string path = dir.file("model.safetensors");
  write_safetensors(path, {{"w", w}, {"b", b}}, {{"format", "pt"}});
  auto opener = std::make_shared<MemoryOpener>();
  opener->add("m/model.safetensors", MemoryRegion::of_string(written(path)));

  const FileFormat* detected = builtin_formats().detect(*opener->open("m/model.safetensors"));
  ASSERT_NE(detected, nullptr);
  EXPECT_EQ(detected->name, "safetensors");
  const auto source = open_files(safetensors_format(), {"m/model.safetensors"}, "m", opener);
  EXPECT_EQ(source->origin(), "m");
  EXPECT_EQ(source->format(), "safetensors");
  EXPECT_EQ(source->metadata().at("format"), "pt");
  ASSERT_EQ(source->tensors().size(), 2u);
  for (const TensorInfo& t : source->tensors()) EXPECT_EQ(source->file_of(t), "m/model.safetensors");
  EXPECT_EQ(bytes_of(source->load(source->at("w"))), bytes_of(w));
  EXPECT_EQ(bytes_of(source->load(source->at("b"))), bytes_of(b));
  // Converted on the way, and sliced, exactly as from the file.
  const auto from_file = open_files(safetensors_format(), {path}, dir.path().string());
  EXPECT_EQ(bytes_of(source->load(source->at("w"), DType::F16)), bytes_of(from_file->load(from_file->at("w"), DType::F16)));
  std::vector<float> cols(4 * 2);
  source->read(source->at("w"), DType::F32, cols.data(), Slice{1, 3, 5});
  for (uint64_t r = 0; r < 4; ++r)
    for (uint64_t c = 0; c < 2; ++c) EXPECT_EQ(cols[r * 2 + c], w.data<float>()[r * 5 + 3 + c]);
  // A zero-copy view points into the region itself.
  const auto region = opener->open("m/model.safetensors");
  const std::optional<TensorView> view = source->view(source->at("w"));
  ASSERT_TRUE(view.has_value());
  EXPECT_GE(view->raw(), region->mapping());
  EXPECT_LE(view->raw() + view->nbytes(), region->mapping() + region->size());
  EXPECT_EQ(bytes_of(*view), bytes_of(w));
}

TEST(MemoryOpener, OpensACustomBinaryCheckpointFromMemory) {
  // meta.txt + model.bin: a 2x3 matrix, a scalar and a vector of 4, float32 back to back.
  std::vector<float> values(3 * 2 + 1 + 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.25f * float(i) - 2;
  auto opener = std::make_shared<MemoryOpener>();
  opener->add("m/meta.txt", MemoryRegion::of_string("a:2,3\nb:\nc:4\n"));
  opener->add("m/model.bin", MemoryRegion::copy_of(values.data(), values.size() * sizeof(float)));
  for (const std::string& path : {std::string("m"), std::string("m/meta.txt"), std::string("m/model.bin")}) {
    SCOPED_TRACE(path);
    const Catalogue c = read_custom_binary_catalogue(*opener, path);
    ASSERT_EQ(c.tensors.size(), 3u);
    EXPECT_EQ(c.file_of(c.tensors[0]), "m/model.bin");
    EXPECT_EQ(c.tensors[1].shape, Shape{});
    const WeightSource source("custom_binary", "m", c, opener);
    EXPECT_EQ(floats_of(source.load(source.at("a"))), std::vector<float>(values.begin(), values.begin() + 6));
    EXPECT_EQ(floats_of(source.load(source.at("b"))), std::vector<float>{values[6]});
    EXPECT_EQ(floats_of(source.load(source.at("c"))), std::vector<float>(values.begin() + 7, values.end()));
  }
  // Its checks run on the memory as on files: one float too many.
  opener->add("m/model.bin", MemoryRegion::copy_of(values.data(), values.size() * sizeof(float) - 4));
  try {
    read_custom_binary_catalogue(*opener, "m");
    ADD_FAILURE() << "a short model.bin was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::BinSizeMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("m/model.bin"), std::string::npos) << e.what();
  }
  expect_error(ErrorCode::FileNotFound, [&] { read_custom_binary_catalogue(*opener, "elsewhere"); });
}

TEST(MemoryOpener, FindsTheSplitsOfAGgufModel) {
  test::TempDir dir;
  const TensorView first = counting(DType::F32, {3, 2}, 1), second = counting(DType::F32, {5}, 50);
  const std::string p1 = dir.file("m-00001-of-00002.gguf"), p2 = dir.file("m-00002-of-00002.gguf");
  const auto keys = [](uint16_t no) {
    return GgufMetadata{{"general.architecture", std::string("test")},
                        {"split.no", no},
                        {"split.count", uint16_t{2}},
                        {"split.tensors.count", int32_t{2}}};
  };
  write_gguf(p1, {{"first.weight", first}}, keys(0));
  write_gguf(p2, {{"second.weight", second}}, keys(1));
  auto opener = std::make_shared<MemoryOpener>();
  opener->add("g/m-00001-of-00002.gguf", MemoryRegion::of_string(written(p1)));
  opener->add("g/m-00002-of-00002.gguf", MemoryRegion::of_string(written(p2)));

  const auto head = opener->open("g/m-00001-of-00002.gguf");
  const FileFormat* format = builtin_formats().detect(*head);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->name, "gguf");
  const Catalogue c = format->read_catalogue(*head, *opener);
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].name, "first.weight");
  EXPECT_EQ(c.file_of(c.tensors[0]), "g/m-00001-of-00002.gguf");
  EXPECT_EQ(c.tensors[1].name, "second.weight");
  EXPECT_EQ(c.file_of(c.tensors[1]), "g/m-00002-of-00002.gguf");
  EXPECT_EQ(c.metadata.at("split.count"), "2");
  const WeightSource source("gguf", "g", c, opener);
  EXPECT_EQ(floats_of(source.load(source.at("first.weight"))), floats_of(first));
  EXPECT_EQ(floats_of(source.load(source.at("second.weight"))), floats_of(second));
  // Through open_files too, which finds the second split with the same opener.
  EXPECT_EQ(open_files(gguf_format(), {"g/m-00001-of-00002.gguf"}, "g", opener)->tensors().size(), 2u);

  // Without the second split, the error names the split it looked for.
  MemoryOpener alone;
  alone.add("g/m-00001-of-00002.gguf", MemoryRegion::of_string(written(p1)));
  try {
    gguf_format().read_catalogue(*alone.open("g/m-00001-of-00002.gguf"), alone);
    ADD_FAILURE() << "read a split model without its second split";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::GgufSplitMissing) << e.what();
    EXPECT_NE(std::string(e.what()).find("g/m-00002-of-00002.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wl
