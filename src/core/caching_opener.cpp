#include "weightloader/byte_source.hpp"

namespace wl {

std::shared_ptr<ByteSource> CachingOpener::open(const std::string& name) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = opened_.find(name); it != opened_.end()) return it->second;
  }
  std::shared_ptr<ByteSource> source = inner_->open(name);  // unlocked: a remote open is a round trip
  std::lock_guard lock(mutex_);
  return opened_.emplace(name, std::move(source)).first->second;  // the first one opened wins
}

uint64_t CachingOpener::bytes_fetched() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [name, source] : opened_) total += source->bytes_fetched();
  return total;
}

bool CachingOpener::exists(const std::string& name) const {
  {
    std::lock_guard lock(mutex_);
    if (opened_.count(name)) return true;
  }
  return inner_->exists(name);
}

}  // namespace wl
