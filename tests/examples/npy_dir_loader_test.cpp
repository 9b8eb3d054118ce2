#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "npy_dir_loader.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/registry.hpp"

namespace npy_example {
namespace {

using wl::DType;
using wl::ErrorCode;
using wl::test::expect_error;
using wl::test::TempDir;

constexpr const char* kPython = WL_PYTHON;  // the project's environment (scripts/setup.sh)

bool have_numpy() {
  return std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0;
}

#define REQUIRE_NUMPY() \
  if (!have_numpy()) GTEST_SKIP() << kPython << " cannot import numpy; the .npy files are made with it"

// Runs a Python script (with numpy as np, sys and os imported) with the directory as argv[1].
void run_python(const TempDir& dir, const std::string& body) {
  const std::string script = dir.file("make.py");
  wl::test::write_bytes(script, "import os, sys\nimport numpy as np\nd = sys.argv[1]\n" + body);
  const std::string out = (dir.path() / "npy").string();
  std::filesystem::create_directories(out);
  ASSERT_EQ(std::system((std::string(kPython) + " " + script + " " + out).c_str()), 0) << body;
}

// The value of element i that the generator script stores, per kind (same formulas in Python).
int64_t signed_value(uint64_t i) { return int64_t(i * 37 % 200) - 100; }
uint64_t unsigned_value(uint64_t i) { return i * 37 % 251; }
double float_value(uint64_t i) { return double(signed_value(i)) * 0.125; }

const char* kGenerate = R"(
def sv(n): return (np.arange(n) * 37 % 200) - 100
def uv(n): return np.arange(n) * 37 % 251
shape = (2, 3, 4)
n = 24
os.makedirs(os.path.join(d, 'layers', '0'))
for descr in ['<f2', '<f4', '<f8']:
    np.save(os.path.join(d, 'f' + descr[2]), (sv(n) * 0.125).astype(descr).reshape(shape))
for descr in ['|i1', '<i2', '<i4', '<i8']:
    np.save(os.path.join(d, 'i' + descr[2]), sv(n).astype(descr).reshape(shape))
for descr in ['|u1', '<u2', '<u4', '<u8']:
    np.save(os.path.join(d, 'u' + descr[2]), uv(n).astype(descr).reshape(shape))
np.save(os.path.join(d, 'b'), (np.arange(n) % 3 == 0).reshape(shape))
np.save(os.path.join(d, 'layers', '0', 'w'), (sv(6) * 0.125).astype('<f4').reshape(2, 3))
np.save(os.path.join(d, 'scalar'), np.float32(2.5))
np.save(os.path.join(d, 'empty'), np.zeros((0, 3), '<f4'))
np.save(os.path.join(d, 'extremes'), np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], '<i8'))
np.save(os.path.join(d, 'fortran'), np.asfortranarray((sv(n) * 0.125).astype('<f4').reshape(shape)))
open(os.path.join(d, 'README.txt'), 'w').write('not a tensor')
)";

// Element i of a tensor of `dtype`, widened for comparison.
double element(const wl::TensorView& t, uint64_t i) {
  switch (t.dtype()) {
    case DType::F16: return wl::f16_bits_to_f32(t.data<uint16_t>()[i]);
    case DType::F32: return t.data<float>()[i];
    case DType::F64: return t.data<double>()[i];
    case DType::I8: return t.data<int8_t>()[i];
    case DType::I16: return t.data<int16_t>()[i];
    case DType::I32: return t.data<int32_t>()[i];
    case DType::I64: return double(t.data<int64_t>()[i]);
    case DType::U8: return t.data<uint8_t>()[i];
    case DType::U16: return t.data<uint16_t>()[i];
    case DType::U32: return t.data<uint32_t>()[i];
    case DType::U64: return double(t.data<uint64_t>()[i]);
    case DType::BOOL: return t.data<uint8_t>()[i];
    default: ADD_FAILURE() << "unexpected dtype " << wl::dtype_name(t.dtype()); return 0;
  }
}

// A registry with the built-ins and the example's loader, as a program using it would make.
std::unique_ptr<wl::WeightLoaderRegistry> registry_with_npy_dir() {
  auto registry = wl::WeightLoaderRegistry::with_builtins();
  npy_example::register_npy_dir_loader(*registry);
  return registry;
}

TEST(NpyDirLoader, RegistersBesideTheBuiltinsOnce) {
  auto registry = registry_with_npy_dir();
  const std::vector<std::string> names = registry->list_available();
  EXPECT_NE(std::find(names.begin(), names.end(), "npy_dir"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "local"), names.end());
  EXPECT_NE(registry->create("npy_dir"), nullptr);
  wl::test::expect_error(wl::ErrorCode::LoaderExists, [&] { npy_example::register_npy_dir_loader(*registry); });
  EXPECT_FALSE(wl::WeightLoaderRegistry::with_builtins()->contains("npy_dir"));  // registries are independent
}

TEST(NpyDirLoader, ReadsEveryDTypeAndValueNumpyWrote) {
  REQUIRE_NUMPY();
  TempDir dir;
  run_python(dir, kGenerate);
  auto loader = registry_with_npy_dir()->create("npy_dir");
  auto source = loader->get_weights((dir.path() / "npy").string());
  EXPECT_EQ(source->format(), "npy_dir");

  std::vector<std::string> names;
  for (const wl::TensorInfo& t : source->tensors()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "empty", "extremes", "f2", "f4", "f8", "fortran", "i1", "i2", "i4",
                                             "i8", "layers.0.w", "scalar", "u1", "u2", "u4", "u8"}));

  const std::vector<std::pair<std::string, DType>> grids = {
      {"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64}, {"i1", DType::I8},  {"i2", DType::I16},
      {"i4", DType::I32}, {"i8", DType::I64}, {"u1", DType::U8},  {"u2", DType::U16}, {"u4", DType::U32},
      {"u8", DType::U64}, {"b", DType::BOOL}, {"fortran", DType::F32}};
  for (const auto& [name, dtype] : grids) {
    const wl::TensorInfo& info = source->at(name);
    EXPECT_EQ(info.dtype, dtype) << name;
    EXPECT_EQ(info.shape, (wl::Shape{2, 3, 4})) << name;
    const wl::TensorView t = source->load(info);
    for (uint64_t i = 0; i < 24; ++i) {
      const double want = name[0] == 'f'   ? float_value(i)
                          : name[0] == 'i' ? double(signed_value(i))
                          : name[0] == 'u' ? double(unsigned_value(i))
                                           : double(i % 3 == 0);
      EXPECT_EQ(element(t, i), want) << name << "[" << i << "]";
    }
  }
  // Fortran order is described by strides, not rejected.
  EXPECT_EQ(source->at("fortran").strides, (std::vector<int64_t>{1, 2, 6}));

  const wl::TensorView w = source->load(source->at("layers.0.w"));
  EXPECT_EQ(w.shape(), (wl::Shape{2, 3}));
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(w.data<float>()[i], float_value(i));
  const wl::TensorView scalar = source->load(source->at("scalar"));
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.data<float>()[0], 2.5f);
  EXPECT_EQ(source->at("empty").shape, (wl::Shape{0, 3}));
  const wl::TensorView extremes = source->load(source->at("extremes"));
  EXPECT_EQ(extremes.data<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(extremes.data<int64_t>()[1], INT64_MAX);
}

TEST(NpyDirLoader, LoadsIntoAModelWithConversion) {
  REQUIRE_NUMPY();
  TempDir dir;
  run_python(dir, R"(
np.save(os.path.join(d, 'w'), np.asfortranarray((np.arange(12, dtype='<f8') * 0.1).reshape(3, 4)))
np.save(os.path.join(d, 'ids'), np.arange(5, dtype='<i8') - 2)
)");
  auto loader = registry_with_npy_dir()->create("npy_dir", {{"dtype", std::string("bf16")}});
  auto source = loader->get_weights((dir.path() / "npy").string());
  wl::Model model = loader->mirror_model(*source);
  const wl::LoadReport report = loader->load_weights(model, *source);
  EXPECT_EQ(report.loaded.size(), 2u);
  const wl::Parameter* w = model.find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype(), DType::BF16);
  EXPECT_EQ(w->shape(), (wl::Shape{3, 4}));
  for (uint64_t i = 0; i < 12; ++i) {
    const double want = double(i) * 0.1;
    uint16_t bits = 0;
    wl::convert(DType::F64, &want, DType::BF16, &bits, 1);
    EXPECT_EQ(w->data.data<uint16_t>()[i], bits) << "w[" << i << "]";
  }
  const wl::Parameter* ids = model.find("ids");
  ASSERT_NE(ids, nullptr);
  for (uint64_t i = 0; i < 5; ++i)
    EXPECT_EQ(wl::bf16_bits_to_f32(ids->data.data<uint16_t>()[i]), float(int(i) - 2)) << "ids[" << i << "]";
}

// A .npy file written by hand: preamble (version 1.0) + header dict + data bytes.
std::string npy_bytes(const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict;
  const size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY") + major + '\0';
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

const std::string kF32x2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

TEST(NpyDirLoader, ParsesHandWrittenHeaders) {
  TempDir dir;
  const float values[2] = {1.5f, -2.0f};
  const std::string data(reinterpret_cast<const char*>(values), sizeof values);
  wl::test::write_bytes(dir.file("v1.npy"), npy_bytes(kF32x2, data));
  wl::test::write_bytes(dir.file("v3.npy"), npy_bytes("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}", data, 3));
  for (const char* name : {"v1.npy", "v3.npy"}) {
    const NpyHeader h = read_npy_header(dir.file(name));
    EXPECT_EQ(h.dtype, DType::F32) << name;
    EXPECT_EQ(h.shape, (wl::Shape{2})) << name;
    EXPECT_FALSE(h.fortran_order) << name;
    EXPECT_EQ(h.data_offset, std::filesystem::file_size(dir.file(name)) - sizeof values) << name;
    EXPECT_EQ(h.data_offset % 64, 0u) << name;  // npy_bytes pads like numpy
  }
}

TEST(NpyDirLoader, RejectsWhatItCannotLoadNamingTheFile) {
  struct Case {
    std::string bytes;
    ErrorCode code;
    std::string says;
  };
  const std::string eight(8, '\0');
  const std::vector<Case> cases = {
      {npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", eight), ErrorCode::UnsupportedDType,
       "big-endian"},
      {npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", eight), ErrorCode::UnsupportedDType,
       "pickled Python objects"},
      {npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", eight), ErrorCode::UnsupportedDType,
       "'<c8' is not supported"},
      {npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", eight),
       ErrorCode::InvalidHeaderDeserialization, "structured dtypes"},
      {npy_bytes("{'descr': '<f4', 'shape': (2,), }", eight), ErrorCode::InvalidHeaderDeserialization,
       "needs 'descr', 'fortran_order' and 'shape'"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", eight),
       ErrorCode::InvalidHeaderDeserialization, "expected True or False"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", eight),
       ErrorCode::InvalidHeaderDeserialization, "non-negative integer"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", eight),
       ErrorCode::InvalidHeaderDeserialization, "unexpected key 'x'"},
      {npy_bytes(kF32x2, eight, 4), ErrorCode::InvalidHeaderDeserialization, "version 4.0"},
      {"\x93NUMPX" + npy_bytes(kF32x2, eight).substr(6), ErrorCode::InvalidHeaderDeserialization, "magic"},
      {npy_bytes(kF32x2, std::string(7, '\0')), ErrorCode::Truncated, "needs 8 data bytes but the file has 7"},
      {npy_bytes(kF32x2, std::string(9, '\0')), ErrorCode::MetadataIncompleteBuffer, "the file has 9"},
      {npy_bytes(kF32x2, eight).substr(0, 40), ErrorCode::Truncated, "runs past the end"},
      {"\x93NUM", ErrorCode::Truncated, "preamble"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    wl::test::write_bytes(dir.file("bad.npy"), c.bytes);
    const std::string what = expect_error(c.code, [&] { read_npy_dir(dir.path().string()); });
    EXPECT_NE(what.find(dir.file("bad.npy")), std::string::npos) << what;
    EXPECT_NE(what.find(c.says), std::string::npos) << what;
  }
}

TEST(NpyDirLoader, DirectoryErrors) {
  TempDir dir;
  expect_error(ErrorCode::NoMatchingFiles, [&] { read_npy_dir(dir.path().string()); });
  expect_error(ErrorCode::FileNotFound, [&] { read_npy_dir(dir.file("missing")); });
  const std::string one(4, '\0');
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  wl::test::write_bytes(dir.file("a.b.npy"), npy_bytes(header, one));
  std::filesystem::create_directories(dir.path() / "a");
  wl::test::write_bytes(dir.file("a/b.npy"), npy_bytes(header, one));
  const std::string what = expect_error(ErrorCode::DuplicateTensorName, [&] { read_npy_dir(dir.path().string()); });
  EXPECT_NE(what.find("a.b.npy"), std::string::npos) << what;
  EXPECT_NE(what.find("a/b.npy"), std::string::npos) << what;
}

}  // namespace
}  // namespace npy_example
