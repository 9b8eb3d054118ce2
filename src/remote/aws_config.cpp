#include "remote/aws_config.hpp"

#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "remote/aws_ini.hpp"
#include "weightloader/error.hpp"

namespace wl::remote {

std::string process_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

namespace {

using Settings = std::map<std::string, std::string>;

// One profile's settings in one file, with where they came from for messages.
struct ProfileFile {
  std::string path;
  std::optional<Settings> settings;  // nullopt: no such file, or no such profile in it
  std::string get(const std::string& key) const {
    if (!settings) return "";
    const auto it = settings->find(key);
    return it == settings->end() ? "" : it->second;
  }
  std::string where(const std::string& profile) const { return fmt::format("profile '{}' of {}", profile, path); }
};

std::string file_path(const EnvLookup& env, const char* variable, const char* home_relative) {
  if (std::string v = env(variable); !v.empty()) return v;
  const std::string home = env("HOME");
  return (home.empty() ? std::string(".") : home) + "/" + home_relative;
}

ProfileFile load_profile(const std::string& path, const std::string& section) {
  ProfileFile file{path, std::nullopt};
  if (const auto ini = read_ini(path)) {
    if (const auto it = ini->find(section); it != ini->end()) file.settings = it->second;
  }
  return file;
}

// The key pair a profile file holds, if any; half of one is an error naming the file.
std::optional<AwsSigning> static_keys(const ProfileFile& file, const std::string& profile) {
  const std::string key = file.get("aws_access_key_id"), secret = file.get("aws_secret_access_key");
  if (key.empty() && secret.empty()) return std::nullopt;
  if (key.empty() || secret.empty())
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} has {} but not {}", file.where(profile), key.empty() ? "aws_secret_access_key" : "aws_access_key_id",
                            key.empty() ? "aws_access_key_id" : "aws_secret_access_key"),
                file.path);
  return AwsSigning{"", key, secret, file.get("aws_session_token"), file.where(profile)};
}

std::optional<AwsSigning> credentials(const EnvLookup& env, const std::string& profile, const ProfileFile& creds,
                                      const ProfileFile& config) {
  const std::string key = env("AWS_ACCESS_KEY_ID"), secret = env("AWS_SECRET_ACCESS_KEY");
  if (!key.empty() || !secret.empty()) {
    if (key.empty() || secret.empty())
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("{} is set but {} is not: S3 requests need both", key.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
                              key.empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY"));
    return AwsSigning{"", key, secret, env("AWS_SESSION_TOKEN"), "the environment (AWS_ACCESS_KEY_ID)"};
  }
  for (const ProfileFile* file : {&creds, &config})
    if (auto keys = static_keys(*file, profile)) return keys;
  for (const ProfileFile* file : {&creds, &config})
    for (const char* other : {"role_arn", "credential_process", "sso_session", "sso_start_url", "web_identity_token_file"})
      if (!file->get(other).empty())
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("{} gets its credentials through {}, which weightloader does not run: export them "
                                "(`aws configure export-credentials --format env`) or give the profile "
                                "aws_access_key_id and aws_secret_access_key",
                                file->where(profile), other),
                    file->path);
  return std::nullopt;
}

S3Addressing addressing(const std::string& value, const std::string& where) {
  if (value.empty() || value == "auto") return S3Addressing::Auto;
  if (value == "path") return S3Addressing::Path;
  if (value == "virtual") return S3Addressing::Virtual;
  throw Error(ErrorCode::InvalidArgument,
              fmt::format("unknown S3 addressing style '{}' in {}: use auto, path or virtual", value, where));
}

std::string first_of(std::initializer_list<std::string> values) {
  for (const std::string& v : values)
    if (!v.empty()) return v;
  return "";
}

}  // namespace

S3Settings resolve_s3_settings(const EnvLookup& env) {
  const std::string chosen = env("AWS_PROFILE"), profile = chosen.empty() ? "default" : chosen;
  const ProfileFile creds = load_profile(file_path(env, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"), profile);
  ProfileFile config = load_profile(file_path(env, "AWS_CONFIG_FILE", ".aws/config"), "profile " + profile);
  if (!config.settings && profile == "default") config = load_profile(config.path, "default");
  if (!chosen.empty() && !creds.settings && !config.settings)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("AWS_PROFILE names profile '{}', which is neither [profile {}] in {} nor [{}] in {}", profile,
                            profile, config.path, profile, creds.path));

  S3Settings s;
  s.region = first_of({env("AWS_REGION"), env("AWS_DEFAULT_REGION"), config.get("region"), "us-east-1"});
  s.endpoint = first_of({env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"), config.get("s3.endpoint_url"),
                         config.get("endpoint_url")});
  while (s.endpoint.ends_with("/")) s.endpoint.pop_back();
  if (const std::string style = env("AWS_S3_ADDRESSING_STYLE"); !style.empty())
    s.addressing = addressing(style, "AWS_S3_ADDRESSING_STYLE");
  else
    s.addressing = addressing(config.get("s3.addressing_style"), config.where(profile));
  s.signing = credentials(env, profile, creds, config);
  if (s.signing) s.signing->region = s.region;
  return s;
}

}  // namespace wl::remote
