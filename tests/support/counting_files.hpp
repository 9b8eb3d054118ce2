// Local files opened through a wrapper that counts the requests made to them: each read_some or
// read_some_scattered call is one request, as one ranged GET would be over HTTP. The wrapper offers
// no descriptor and no mapping, so the engine reads it with positioned reads, as a remote object.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "weightloader/byte_source.hpp"

namespace wl::test {

class CountedFile final : public ByteSource {
 public:
  CountedFile(std::shared_ptr<ByteSource> inner, std::atomic<uint64_t>& requests) : inner_(std::move(inner)), requests_(requests) {}
  const std::string& name() const noexcept override { return inner_->name(); }
  uint64_t size() const noexcept override { return inner_->size(); }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override {
    ++requests_;
    return inner_->read_some(offset, dst, length);
  }
  uint64_t read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const override {
    ++requests_;
    return inner_->read_some_scattered(offset, buffers, count);
  }

 private:
  std::shared_ptr<ByteSource> inner_;
  std::atomic<uint64_t>& requests_;
};

class CountingFiles final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    return std::make_shared<CountedFile>(local_opener()->open(name), requests_);
  }
  bool exists(const std::string& name) const override { return local_opener()->exists(name); }
  bool is_directory(const std::string& name) const override { return local_opener()->is_directory(name); }
  std::vector<std::string> list(const std::string& directory) const override { return local_opener()->list(directory); }
  uint64_t requests() const { return requests_.load(); }

 private:
  mutable std::atomic<uint64_t> requests_{0};
};

}  // namespace wl::test
