// docs/errors.md documents every error code declared in include/weightloader/error.hpp.
#include <gtest/gtest.h>

#include <regex>

#include "test_util.hpp"

namespace wl {
namespace {

TEST(ErrorDocs, EveryCodeIsDocumented) {
  const std::string header = test::read_bytes(std::string(WL_SOURCE_DIR) + "/include/weightloader/error.hpp");
  const std::string docs = test::read_bytes(std::string(WL_SOURCE_DIR) + "/docs/errors.md");
  const size_t begin = header.find("enum class ErrorCode {");
  const size_t end = header.find("};", begin);
  ASSERT_NE(begin, std::string::npos);
  const std::string body = header.substr(begin, end - begin);
  const std::regex code(R"(\n\s*([A-Z][A-Za-z0-9]*),)");
  size_t count = 0;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), code); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    ++count;
    EXPECT_NE(docs.find("`" + name + "`"), std::string::npos) << name << " is not in docs/errors.md";
    EXPECT_EQ(std::string(error_code_name(ErrorCode(count - 1))), name) << "error_code_name out of step";
  }
  EXPECT_GT(count, 30u);
}

}  // namespace
}  // namespace wl
