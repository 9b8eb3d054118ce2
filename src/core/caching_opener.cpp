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

bool CachingOpener::exists(const std::string& name) const {
  {
    std::lock_guard lock(mutex_);
    if (opened_.count(name)) return true;
  }
  return inner_->exists(name);
}

}  // namespace wl
