// The copy engine of one CUDA device: pinned memory from cudaHostAlloc, device memory from
// cudaMalloc, copies with cudaMemcpyAsync on a few non-blocking streams, each completion an event.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/copy_engine.hpp"

namespace wl {

class CudaCopyEngine final : public CopyEngine {
 public:
  // Throws wl::Error when the device cannot be used (no driver, no such device).
  explicit CudaCopyEngine(int device, unsigned streams = 4);
  ~CudaCopyEngine() override;
  CudaCopyEngine(const CudaCopyEngine&) = delete;
  CudaCopyEngine& operator=(const CudaCopyEngine&) = delete;

  std::string name() const override { return "cuda:" + std::to_string(device_); }
  unsigned streams() const override { return static_cast<unsigned>(streams_.size()); }
  std::byte* alloc_pinned(uint64_t bytes) override;
  void free_pinned(std::byte* p) noexcept override;
  std::byte* alloc_device(uint64_t bytes) override;
  void free_device(std::byte* p) noexcept override;
  uint64_t copy_async(std::byte* dst, const std::byte* src, uint64_t n, unsigned stream) override;
  void wait(uint64_t ticket) override;

  // The number of CUDA devices, or 0 with the runtime's reason in `why` (no driver, none present).
  static int device_count(std::string& why);

 private:
  cudaEvent_t take_event();

  const int device_;
  std::vector<cudaStream_t> streams_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> spare_;                      // events to reuse
  std::unordered_map<uint64_t, cudaEvent_t> pending_;   // ticket -> its completion
  uint64_t next_ticket_ = 1;
};

}  // namespace wl
