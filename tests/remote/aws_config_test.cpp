// Region, endpoint, addressing and credentials for S3: the environment first, then the profile
// files, under a temporary HOME (no real ~/.aws is read).
#include "remote/aws_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "test_util.hpp"

namespace wl::remote {
namespace {

class AwsConfig : public ::testing::Test {
 protected:
  test::TempDir home;
  std::map<std::string, std::string> vars{{"HOME", home.path().string()}};

  EnvLookup env() const {
    return [this](const char* name) {
      const auto it = vars.find(name);
      return it == vars.end() ? std::string() : it->second;
    };
  }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((home.path() / rel).parent_path());
    test::write_bytes(home.file(rel), text);
  }
  S3Settings resolve() const { return resolve_s3_settings(env()); }
};

TEST_F(AwsConfig, NothingConfiguredIsAnonymousUsEast1OnAwsItself) {
  const S3Settings s = resolve();
  EXPECT_EQ(s.region, "us-east-1");
  EXPECT_EQ(s.endpoint, "");
  EXPECT_EQ(s.addressing, S3Addressing::Auto);
  EXPECT_FALSE(s.signing.has_value());
}

TEST_F(AwsConfig, TheEnvironmentComesFirst) {
  write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  write(".aws/config", "[default]\nregion = eu-west-1\nendpoint_url = http://profile:1\n");
  vars.insert({{"AWS_ACCESS_KEY_ID", "ENVKEY"}, {"AWS_SECRET_ACCESS_KEY", "envsecret"}, {"AWS_SESSION_TOKEN", "tok"},
               {"AWS_REGION", "ap-south-1"}, {"AWS_DEFAULT_REGION", "sa-east-1"},
               {"AWS_ENDPOINT_URL", "http://all:2/"}, {"AWS_ENDPOINT_URL_S3", "http://s3only:3/"}});
  S3Settings s = resolve();
  EXPECT_EQ(s.region, "ap-south-1");
  EXPECT_EQ(s.endpoint, "http://s3only:3");  // the service's own first, trailing '/' dropped
  ASSERT_TRUE(s.signing);
  EXPECT_EQ(s.signing->access_key, "ENVKEY");
  EXPECT_EQ(s.signing->secret_key, "envsecret");
  EXPECT_EQ(s.signing->session_token, "tok");
  EXPECT_EQ(s.signing->region, "ap-south-1");
  EXPECT_NE(s.signing->source.find("environment"), std::string::npos);

  vars.erase("AWS_REGION");
  vars.erase("AWS_ENDPOINT_URL_S3");
  s = resolve();
  EXPECT_EQ(s.region, "sa-east-1");
  EXPECT_EQ(s.endpoint, "http://all:2");
  vars.erase("AWS_DEFAULT_REGION");
  vars.erase("AWS_ENDPOINT_URL");
  s = resolve();
  EXPECT_EQ(s.region, "eu-west-1");
  EXPECT_EQ(s.endpoint, "http://profile:1");
}

TEST_F(AwsConfig, HalfAKeyPairInTheEnvironmentIsAnError) {
  vars["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
  EXPECT_NE(what.find("AWS_SECRET_ACCESS_KEY is not"), std::string::npos) << what;
}

TEST_F(AwsConfig, TheDefaultProfileFromTheCredentialsFile) {
  write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
                            "aws_session_token = filetoken\n[other]\naws_access_key_id = O\naws_secret_access_key = o\n");
  const S3Settings s = resolve();
  ASSERT_TRUE(s.signing);
  EXPECT_EQ(s.signing->access_key, "FILEKEY");
  EXPECT_EQ(s.signing->session_token, "filetoken");
  EXPECT_EQ(s.signing->source, "profile 'default' of " + home.file(".aws/credentials"));
}

TEST_F(AwsConfig, AwsProfileSelectsInBothFilesAndTheCredentialsFileWins) {
  write(".aws/credentials", "[dev]\naws_access_key_id = CREDKEY\naws_secret_access_key = credsecret\n");
  write(".aws/config", "[default]\nregion = eu-west-1\n"
                       "[profile dev]\nregion = us-west-2\naws_access_key_id = CFGKEY\naws_secret_access_key = cfgsecret\n"
                       "s3 =\n  addressing_style = virtual\n  endpoint_url = http://dev-s3:9000\n"
                       "[profile cfgonly]\naws_access_key_id = ONLY\naws_secret_access_key = only\n");
  vars["AWS_PROFILE"] = "dev";
  S3Settings s = resolve();
  EXPECT_EQ(s.region, "us-west-2");
  EXPECT_EQ(s.endpoint, "http://dev-s3:9000");
  EXPECT_EQ(s.addressing, S3Addressing::Virtual);
  EXPECT_EQ(s.signing->access_key, "CREDKEY");
  vars["AWS_PROFILE"] = "cfgonly";  // keys in the config file only
  s = resolve();
  EXPECT_EQ(s.signing->access_key, "ONLY");
  EXPECT_EQ(s.region, "us-east-1");  // not the default profile's
  EXPECT_EQ(s.signing->source, "profile 'cfgonly' of " + home.file(".aws/config"));
}

TEST_F(AwsConfig, FilePathsFromTheEnvironment) {
  write("elsewhere/creds", "[default]\naws_access_key_id = K\naws_secret_access_key = S\n");
  write("elsewhere/cfg", "[profile default]\nregion = ca-central-1\n");  // [profile default] is accepted too
  vars["AWS_SHARED_CREDENTIALS_FILE"] = home.file("elsewhere/creds");
  vars["AWS_CONFIG_FILE"] = home.file("elsewhere/cfg");
  const S3Settings s = resolve();
  EXPECT_EQ(s.signing->access_key, "K");
  EXPECT_EQ(s.region, "ca-central-1");
}

TEST_F(AwsConfig, AnUnknownProfileNamesBothFiles) {
  vars["AWS_PROFILE"] = "nope";
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
  EXPECT_NE(what.find("profile 'nope'"), std::string::npos) << what;
  EXPECT_NE(what.find(home.file(".aws/config")), std::string::npos) << what;
  EXPECT_NE(what.find(home.file(".aws/credentials")), std::string::npos) << what;
}

TEST_F(AwsConfig, AMalformedFileNamesItsPathAndLine) {
  write(".aws/credentials", "[default]\naws_access_key_id AKIA\n");
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
  EXPECT_NE(what.find(home.file(".aws/credentials")), std::string::npos) << what;
  EXPECT_NE(what.find("line 2"), std::string::npos) << what;
}

TEST_F(AwsConfig, HalfAKeyPairInAProfileNamesTheFile) {
  write(".aws/credentials", "[default]\naws_access_key_id = AKIA\n");
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
  EXPECT_NE(what.find("has aws_access_key_id but not aws_secret_access_key"), std::string::npos) << what;
}

TEST_F(AwsConfig, CredentialSourcesNotRunHereAreNamed) {
  write(".aws/config", "[profile sso]\nsso_session = corp\n[profile role]\nrole_arn = arn:aws:iam::1:role/r\n");
  for (const char* profile : {"sso", "role"}) {
    vars["AWS_PROFILE"] = profile;
    const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
    EXPECT_NE(what.find("export-credentials"), std::string::npos) << what;
  }
}

TEST_F(AwsConfig, AddressingStyle) {
  vars["AWS_S3_ADDRESSING_STYLE"] = "path";
  EXPECT_EQ(resolve().addressing, S3Addressing::Path);
  vars["AWS_S3_ADDRESSING_STYLE"] = "sideways";
  const std::string what = test::expect_error(ErrorCode::InvalidArgument, [&] { resolve(); });
  EXPECT_NE(what.find("use auto, path or virtual"), std::string::npos) << what;
  vars.erase("AWS_S3_ADDRESSING_STYLE");
  write(".aws/config", "[default]\ns3 =\n    addressing_style = virtual\n");
  EXPECT_EQ(resolve().addressing, S3Addressing::Virtual);
}

}  // namespace
}  // namespace wl::remote
