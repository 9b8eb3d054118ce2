// The header as stated: every rule checked as the catalogue checks it, with __metadata__'s absence
// and the dtypes weightloader cannot hold kept.
#include <gtest/gtest.h>

#include "core/file.hpp"
#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

SafetensorsHeader stated(const std::string& header, const std::string& data = {}) {
  TempDir dir;
  return read_stated_safetensors_header(File(make_safetensors(dir, header, data)));
}

TEST(SafetensorsStatedHeader, MetadataAbsentNullEmptyAndGiven) {
  const std::string t = R"("t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  EXPECT_FALSE(stated("{" + t + "}", "x").metadata);
  EXPECT_FALSE(stated(R"({"__metadata__":null,)" + t + "}", "x").metadata);
  EXPECT_EQ(stated(R"({"__metadata__":{},)" + t + "}", "x").metadata, (std::map<std::string, std::string>{}));
  EXPECT_EQ(stated(R"({"__metadata__":{"k":"v"},)" + t + "}", "x").metadata,
            (std::map<std::string, std::string>{{"k", "v"}}));
}

TEST(SafetensorsStatedHeader, KeepsDtypesTheCatalogueRefusesWithAbsoluteOffsets) {
  const std::string header = R"({"z":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
                             R"("c":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})";
  const SafetensorsHeader h = stated(header, std::string(12, '\0'));
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "c");  // by offset
  EXPECT_EQ(h.tensors[0].dtype_name, "C64");
  EXPECT_FALSE(h.tensors[0].dtype);
  EXPECT_EQ(h.tensors[0].offset, 8 + header.size());
  EXPECT_EQ(h.tensors[0].nbytes, 8u);
  EXPECT_EQ(h.tensors[1].dtype, DType::F32);
  EXPECT_EQ(h.tensors[1].shape, (Shape{1}));
  TempDir dir;
  expect_error(ErrorCode::UnsupportedDType,
               [&] { read_safetensors_catalogue(make_safetensors(dir, header, std::string(12, '\0'))); });
}

TEST(SafetensorsStatedHeader, BreaksTheSameRulesAsTheCatalogue) {
  expect_error(ErrorCode::MetadataIncompleteBuffer,
               [] { stated(R"({"t":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", "short"); });
  expect_error(ErrorCode::UnsupportedDType,
               [] { stated(R"({"t":{"dtype":"C128","shape":[1],"data_offsets":[0,16]}})", std::string(16, '\0')); });
  expect_error(ErrorCode::InvalidMetadata, [] { stated(R"({"__metadata__":{"k":1}})"); });
}

}  // namespace
}  // namespace wl::test
