// Complex tensors (C64) catalogued as pairs of their part when the reader asks for them: the same
// bytes as F32 with a last dimension of 2, their names listed; refused as before otherwise.

#include <gtest/gtest.h>

#include "core/file.hpp"
#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

const std::string kHeader = R"({"z":{"dtype":"F16","shape":[2],"data_offsets":[16,20]},)"
                            R"("c":{"dtype":"C64","shape":[2],"data_offsets":[0,16]},)"
                            R"("f":{"dtype":"F4","shape":[2],"data_offsets":[20,21]}})";

TEST(SafetensorsComplexPairs, C64IsAPairOfF32) {
  EXPECT_EQ(safetensors_complex_part("C64"), DType::F32);
  EXPECT_FALSE(safetensors_complex_part("F32"));
  EXPECT_FALSE(safetensors_complex_part("C128"));  // not a safetensors dtype
}

TEST(SafetensorsComplexPairs, CataloguedAsPairsAndNamed) {
  TempDir dir;
  const std::string path = make_safetensors(dir, kHeader, std::string(21, '\0'));
  const SafetensorsWithComplex read = read_safetensors_catalogue_with_complex(File(path));
  EXPECT_EQ(read.complex, (std::vector<std::string>{"c"}));
  ASSERT_EQ(read.catalogue.tensors.size(), 3u);
  const TensorInfo& c = read.catalogue.tensors[0];  // by offset
  EXPECT_EQ(c.name, "c");
  EXPECT_EQ(c.dtype, DType::F32);
  EXPECT_EQ(c.shape, (Shape{2, 2}));
  EXPECT_EQ(c.nbytes, 16u);
  EXPECT_EQ(c.decoder, nullptr);  // raw: read (and mapped) as it is
  EXPECT_EQ(read.catalogue.tensors[1].dtype, DType::F16);
  EXPECT_EQ(read.catalogue.tensors[2].stored_type(), "F4");  // the sub-byte float keeps its decoder
  // Without asking, the catalogue refuses it as any dtype the library lacks.
  expect_error(ErrorCode::UnsupportedDType, [&] { read_safetensors_catalogue(path); });
}

TEST(SafetensorsComplexPairs, OtherForeignDTypesAndBrokenRulesStillRefused) {
  TempDir dir;
  const std::string fnuz = make_safetensors(dir, R"({"c":{"dtype":"C64","shape":[1],"data_offsets":[0,8]},)"
                                                 R"("f":{"dtype":"F8_E4M3FNUZ","shape":[1],"data_offsets":[8,9]}})",
                                            std::string(9, '\0'));
  expect_error(ErrorCode::UnsupportedDType, [&] { read_safetensors_catalogue_with_complex(File(fnuz)); });
  TempDir other;
  const std::string short_data = make_safetensors(other, R"({"c":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", "short");
  expect_error(ErrorCode::MetadataIncompleteBuffer, [&] { read_safetensors_catalogue_with_complex(File(short_data)); });
}

}  // namespace
}  // namespace wl::test
