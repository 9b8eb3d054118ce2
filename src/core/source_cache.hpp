// The byte sources one WeightSource reads from: each name is opened once, through its opener.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "weightloader/byte_source.hpp"

namespace wl {

class SourceCache {
 public:
  explicit SourceCache(std::shared_ptr<const Opener> opener) : opener_(std::move(opener)) {}

  // The source named `name`, opened on first use. Thread-safe.
  std::shared_ptr<ByteSource> get(const std::string& name);
  const Opener& opener() const noexcept { return *opener_; }
  const std::shared_ptr<const Opener>& shared_opener() const noexcept { return opener_; }

 private:
  std::shared_ptr<const Opener> opener_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<ByteSource>> sources_;
};

}  // namespace wl
