#include "core/source_cache.hpp"

namespace wl {

std::shared_ptr<ByteSource> SourceCache::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& slot = sources_[name];
  if (!slot) slot = opener_->open(name);
  return slot;
}

}  // namespace wl
