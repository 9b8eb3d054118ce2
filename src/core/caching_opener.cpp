#include <optional>
#include <utility>

#include "weightloader/byte_source.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// The answer cached under `name` in `cache`, or `ask()`'s (asked unlocked: over a network it is a round trip).
template <class Value, class Ask>
Value remembered(std::mutex& mutex, std::map<std::string, Value>& cache, const std::string& name, Ask&& ask) {
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(name); it != cache.end()) return it->second;
  }
  Value value = ask();
  std::lock_guard lock(mutex);
  return cache.emplace(name, std::move(value)).first->second;  // the first answer wins
}

}  // namespace

std::shared_ptr<ByteSource> CachingOpener::open(const std::string& name) const {
  return remembered(mutex_, opened_, name, [&] {
    std::optional<std::pair<uint64_t, std::string>> known;
    {
      std::lock_guard lock(mutex_);
      if (auto it = expected_.find(name); it != expected_.end()) known = it->second;
    }
    return known ? inner_->open_known(name, known->first, known->second) : inner_->open(name);
  });
}

std::shared_ptr<ByteSource> CachingOpener::open_known(const std::string& name, uint64_t size, const std::string& version) const {
  return remembered(mutex_, opened_, name, [&] { return inner_->open_known(name, size, version); });
}

void CachingOpener::expect(const std::string& name, uint64_t size, std::string version) const {
  std::lock_guard lock(mutex_);
  expected_[name] = {size, std::move(version)};
}

uint64_t CachingOpener::bytes_fetched() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [name, source] : opened_) total += source->bytes_fetched();
  return total;
}

bool CachingOpener::exists(const std::string& name) const {
  return remembered(mutex_, exists_, name, [&] {
    if (is_directory(name)) return true;
    try {
      open(name);  // a remote object's HEAD answers both questions
      return true;
    } catch (const Error& e) {
      if (e.code() == ErrorCode::FileNotFound) return false;
      return inner_->exists(name);  // there, but not openable (permissions): the inner opener says so
    }
  });
}

bool CachingOpener::is_directory(const std::string& name) const {
  return remembered(mutex_, directories_, name, [&] { return inner_->is_directory(name); });
}

std::vector<std::string> CachingOpener::list(const std::string& directory) const {
  return remembered(mutex_, listed_, directory, [&] { return inner_->list(directory); });
}

}  // namespace wl
