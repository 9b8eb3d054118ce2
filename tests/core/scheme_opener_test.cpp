// Names routed to openers by URL scheme; plain paths go to the local file system.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

TEST(SchemeOpener, PlainPathsAreLocalFilesAndSchemesGoToTheirOpener) {
  test::TempDir dir;
  test::write_bytes(dir.file("a.txt"), "local");
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("mem://bucket/b.txt", MemoryRegion::of_string("remote"));
  SchemeOpener opener;
  opener.add("mem", memory);
  EXPECT_EQ(opener.open(dir.file("a.txt"))->read_string(0, 5), "local");
  EXPECT_EQ(opener.open("mem://bucket/b.txt")->read_string(0, 6), "remote");
  EXPECT_TRUE(opener.exists("mem://bucket/b.txt"));
  EXPECT_EQ(opener.list("mem://bucket"), std::vector<std::string>{"mem://bucket/b.txt"});
  EXPECT_EQ(opener.join("mem://bucket", "c.json"), "mem://bucket/c.json");
  EXPECT_EQ(opener.parent("mem://bucket/b.txt"), "mem://bucket");
  EXPECT_EQ(opener.schemes(), std::vector<std::string>{"mem"});
  // A colon-slash-slash after a slash is part of a local path, not a scheme.
  EXPECT_FALSE(opener.exists(dir.file("x://y")));
}

TEST(SchemeOpener, PlainNamesGoToTheOpenerItIsBuiltOver) {
  // What with_remote() does to a context's opener: schemes added over it, everything else as before.
  auto plain = std::make_shared<MemoryOpener>();
  plain->add("models/a.txt", MemoryRegion::of_string("plain"));
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("mem://bucket/b.txt", MemoryRegion::of_string("remote"));
  SchemeOpener opener(plain);
  opener.add("mem", memory);
  EXPECT_EQ(opener.open("models/a.txt")->read_string(0, 5), "plain");
  EXPECT_EQ(opener.open("mem://bucket/b.txt")->read_string(0, 6), "remote");
  EXPECT_FALSE(opener.exists("/etc/hostname"));  // not the local file system
}

TEST(SchemeOpener, AnUnknownSchemeIsAClearErrorNamingTheUrl) {
  SchemeOpener opener;
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { opener.open("gopher://host/model.safetensors"); });
  EXPECT_NE(msg.find("gopher://host/model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no byte source for 'gopher://'"), std::string::npos) << msg;
  opener.add("mem", std::make_shared<MemoryOpener>());
  test::expect_error(ErrorCode::InvalidArgument, [&] { opener.add("mem", std::make_shared<MemoryOpener>()); });
  test::expect_error(ErrorCode::InvalidArgument, [&] { opener.add("Bad/Scheme", std::make_shared<MemoryOpener>()); });
}

TEST(SchemeOpener, ACheckpointBehindASchemeOpensThroughTheSameReaders) {
  test::TempDir dir;
  TensorView t = TensorView::empty(DType::F32, {3});
  for (int i = 0; i < 3; ++i) t.data<float>()[i] = float(i) + 0.5f;
  write_safetensors(dir.file("m.safetensors"), {{"w", t}});
  auto memory = std::make_shared<MemoryOpener>();
  memory->add("mem://models/m.safetensors", MemoryRegion::of_string(test::read_bytes(dir.file("m.safetensors"))));
  auto opener = std::make_shared<SchemeOpener>();
  opener->add("mem", memory);
  auto source = open_files(safetensors_format(), {"mem://models/m.safetensors"}, "mem://models", opener);
  EXPECT_EQ(source->load(source->at("w")).data<float>()[2], 2.5f);
}

}  // namespace
}  // namespace wl
