// Names routed to openers by their URL scheme.
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl {

struct SchemeOpener::State {
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Opener>> by_scheme;
};

SchemeOpener::SchemeOpener(std::shared_ptr<const Opener> plain)
    : state_(std::make_shared<State>()), plain_(plain ? std::move(plain) : local_opener()) {}

void SchemeOpener::add(const std::string& scheme, std::shared_ptr<const Opener> opener) {
  if (scheme.empty() || scheme.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+-.") != std::string::npos)
    throw Error(ErrorCode::InvalidArgument, fmt::format("'{}' is not a URL scheme (lower-case letters, digits, + - .)", scheme));
  std::lock_guard lock(state_->mutex);
  if (!state_->by_scheme.emplace(scheme, std::move(opener)).second)
    throw Error(ErrorCode::InvalidArgument, fmt::format("an opener for '{}://' is already added", scheme));
}

std::vector<std::string> SchemeOpener::schemes() const {
  std::lock_guard lock(state_->mutex);
  std::vector<std::string> out;
  for (const auto& [scheme, opener] : state_->by_scheme) out.push_back(scheme);
  return out;
}

const Opener& SchemeOpener::route(const std::string& name) const {
  const size_t colon = name.find("://");
  // A scheme is letters before "://" with no '/' in them; anything else is a local path.
  if (colon == std::string::npos || colon == 0 || name.find('/') < colon) return *plain_;
  const std::string scheme = name.substr(0, colon);
  std::lock_guard lock(state_->mutex);
  const auto it = state_->by_scheme.find(scheme);
  if (it == state_->by_scheme.end()) {
    std::vector<std::string> known;
    for (const auto& [s, o] : state_->by_scheme) known.push_back(s + "://");
    const bool remote = state_->by_scheme.count("http") > 0;
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("no byte source for '{}://' here (known: local paths{}{}){}", scheme, known.empty() ? "" : ", ",
                            fmt::join(known, ", "),
                            remote ? "" : "; a context made by wl::with_remote() opens http, https and s3"),
                name);
  }
  return *it->second;
}

}  // namespace wl
