// The hostile-input matrix once more, from memory: every case of hostile_files.hpp put into a
// MemoryOpener (a file case as one region, a directory case as regions under its name) and opened
// as `--loader auto` opens a path, with that opener. Each must fail with the code the file-based
// matrix expects, and the error must name the in-memory label.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "hostile/hostile_files.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/format.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {
namespace {

const std::vector<HostileCase>& cases() {
  static const std::vector<HostileCase> list = hostile_cases();
  return list;
}

bool is_file_case(const HostileCase& c) { return c.files.size() == 1 && c.files.front().first == c.name; }

// A directory with no files cannot be told apart from no directory at all in a MemoryOpener,
// whose directories are implied by the names of the files in them.
bool representable(const HostileCase& c) { return !c.files.empty(); }

// Where a case lives in memory: "mem/<name>" (the file itself, or the directory).
std::string label_of(const HostileCase& c) { return "mem/" + c.name; }

std::shared_ptr<MemoryOpener> opener_for(const HostileCase& c) {
  auto opener = std::make_shared<MemoryOpener>();
  for (const auto& [path, bytes] : c.files)
    opener->add(is_file_case(c) ? label_of(c) : label_of(c) + "/" + path, MemoryRegion::of_string(bytes));
  return opener;
}

const HostileCase& find_case(const std::string& name) {
  for (const HostileCase& c : cases())
    if (c.name == name) return c;
  throw std::runtime_error("no hostile case " + name);
}

std::vector<std::string> names(bool files_only) {
  std::vector<std::string> out;
  for (const HostileCase& c : cases())
    if (representable(c) && (!files_only || is_file_case(c))) out.push_back(c.name);
  return out;
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

// Checks the error of a hostile case: its code, its file naming the label, the part it must name.
void expect_hostile_error(const HostileCase& c, const std::function<void()>& open) {
  const std::string label = label_of(c);
  try {
    open();
    ADD_FAILURE() << c.name << ": no error, expected " << error_code_name(c.code);
  } catch (const Error& e) {
    EXPECT_EQ(error_code_name(e.code()), error_code_name(c.code)) << e.what();
    if (is_file_case(c))
      EXPECT_EQ(e.file(), label) << e.what();
    else
      EXPECT_EQ(e.file().rfind(label, 0), 0u) << "file() " << e.file() << " is not within " << label << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(label), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
  }
}

// As `--loader auto`: the loader detection picks for the path, with the opener set, then a load of
// every tensor into a model that mirrors the checkpoint.
class HostileMemoryMatrix : public testing::TestWithParam<std::string> {};

TEST_P(HostileMemoryMatrix, FailsWithItsCodeNamingTheLabel) {
  const HostileCase& c = find_case(GetParam());
  const std::shared_ptr<MemoryOpener> opener = opener_for(c);
  expect_hostile_error(c, [&] {
    const LoaderChoice choice = detect_loader(label_of(c), *opener, builtin_formats());
    std::unique_ptr<WeightLoader> loader = WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
    loader->options().context.opener = opener;
    const std::unique_ptr<WeightSource> source = loader->get_weights(label_of(c));
    Model model = loader->mirror_model(*source);
    loader->load_weights(model, *source);
  });
}

INSTANTIATE_TEST_SUITE_P(HostileMemory, HostileMemoryMatrix, testing::ValuesIn(names(false)), test_name);

// The single-file cases through the format list alone: detect by content, read the catalogue.
class HostileMemoryFormats : public testing::TestWithParam<std::string> {};

TEST_P(HostileMemoryFormats, FailsWithItsCodeNamingTheLabel) {
  const HostileCase& c = find_case(GetParam());
  const std::shared_ptr<MemoryOpener> opener = opener_for(c);
  expect_hostile_error(c, [&] {
    const std::shared_ptr<ByteSource> source = opener->open(label_of(c));
    const FileFormat& format = builtin_formats().detect_or_throw(*source);
    EXPECT_EQ(builtin_formats().detect(*source), &format);
    const Catalogue catalogue = format.read_catalogue(*source, *opener);
    // Whatever the catalogue let through must fail when its tensors are read.
    const WeightSource weights(format.name, label_of(c), catalogue, opener);
    for (const TensorInfo& t : weights.tensors()) weights.load(t);
  });
}

INSTANTIATE_TEST_SUITE_P(HostileMemory, HostileMemoryFormats, testing::ValuesIn(names(true)), test_name);

// Every case of the file-based matrix but the empty directory runs here too.
TEST(HostileMemoryCoverage, EveryRepresentableCaseIsInTheMatrix) {
  size_t skipped = 0;
  for (const HostileCase& c : cases()) skipped += !representable(c);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(names(false).size() + skipped, cases().size());
  EXPECT_GT(names(true).size(), 20u);
}

}  // namespace
}  // namespace wl::test
