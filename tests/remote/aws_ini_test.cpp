// The strict INI reader behind ~/.aws/config and ~/.aws/credentials.
#include "remote/aws_ini.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace wl::remote {
namespace {

TEST(AwsIni, SectionsSettingsCommentsAndNestedBlocks) {
  const IniSections ini = parse_ini(
      "# a comment\n"
      "; another\n"
      "\n"
      "[default]\n"
      "region = eu-west-1\n"
      "Output=json\n"
      "[profile dev]\n"
      "  aws_access_key_id =  AKIDEV  \n"  // a whole section indented alike: settings of its own
      "  aws_secret_access_key = x=y\n",
      "cfg");
  EXPECT_EQ(ini.at("default").at("region"), "eu-west-1");
  EXPECT_EQ(ini.at("default").at("output"), "json");  // names are case-insensitive: lower case
  EXPECT_EQ(ini.at("profile dev").at("aws_access_key_id"), "AKIDEV");
  EXPECT_EQ(ini.at("profile dev").at("aws_secret_access_key"), "x=y");  // the first '=' splits
  EXPECT_EQ(ini.size(), 2u);
}

TEST(AwsIni, ANestedBlockIsFlattened) {
  const IniSections ini = parse_ini(
      "[profile p]\n"
      "s3 =\n"
      "  addressing_style = path\n"
      "  endpoint_url = http://127.0.0.1:9000\n"
      "region = us-west-2 # not a comment: values keep it\n",
      "cfg");
  const auto& p = ini.at("profile p");
  EXPECT_EQ(p.at("s3.addressing_style"), "path");
  EXPECT_EQ(p.at("s3.endpoint_url"), "http://127.0.0.1:9000");
  EXPECT_EQ(p.at("region"), "us-west-2 # not a comment: values keep it");
}

TEST(AwsIni, MalformedLinesNameTheFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"[default]\nregion\n", "line 2: expected 'name = value'"},
      {"region = x\n", "line 1: a setting before any [section]"},
      {"[default\n", "line 1: a section header must end with ']'"},
      {"[ ]\n", "line 1: an empty section name"},
      {"[a]\n[b]\n[a]\n", "line 3: section [a] appears twice"},
      {"[a]\nx = 1\nX = 2\n", "line 3: setting 'x' appears twice"},
      {"[a]\nregion = x\n  sub = y\n", "line 3: an indented line continuing the value of 'region'"},
      {"[a]\n = y\n", "line 2: a setting with no name"},
  };
  for (const auto& [text_, want] : cases) {
    const char* text = text_;  // a lambda may not capture a structured binding under clang 14
    const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { parse_ini(text, "/home/u/.aws/config"); });
    EXPECT_NE(what.find(want), std::string::npos) << what;
    EXPECT_NE(what.find("/home/u/.aws/config"), std::string::npos) << what;
  }
}

TEST(AwsIni, AMissingFileIsNoneAnUnreadableOneAnError) {
  test::TempDir dir;
  EXPECT_FALSE(read_ini(dir.file("absent")).has_value());
  test::write_bytes(dir.file("config"), "[default]\nregion = ap-south-1\n");
  EXPECT_EQ(read_ini(dir.file("config"))->at("default").at("region"), "ap-south-1");
}

}  // namespace
}  // namespace wl::remote
