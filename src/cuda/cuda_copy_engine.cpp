#include "cuda/cuda_copy_engine.hpp"

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {
namespace {

void check(cudaError_t status, const std::string& what, int device) {
  if (status == cudaSuccess) return;
  throw Error(ErrorCode::Io, fmt::format("{} on cuda:{} failed: {} ({})", what, device, cudaGetErrorString(status),
                                         cudaGetErrorName(status)));
}

}  // namespace

int CudaCopyEngine::device_count(std::string& why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    why = fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorString(status), cudaGetErrorName(status));
    return 0;
  }
  if (count == 0) why = "cudaGetDeviceCount: no CUDA device";
  return count;
}

CudaCopyEngine::CudaCopyEngine(int device, unsigned streams) : device_(device) {
  std::string why;
  const int count = device_count(why);
  if (device < 0 || device >= count)
    throw Error(ErrorCode::InvalidArgument,
                count ? fmt::format("no device cuda:{}: this machine has {} CUDA device(s)", device, count)
                      : fmt::format("no device cuda:{}: {}", device, why));
  check(cudaSetDevice(device_), "cudaSetDevice", device_);
  streams_.resize(std::max(1u, streams));
  for (cudaStream_t& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", device_);
}

CudaCopyEngine::~CudaCopyEngine() {
  cudaSetDevice(device_);
  for (auto& [ticket, event] : pending_) {
    cudaEventSynchronize(event);
    cudaEventDestroy(event);
  }
  for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
}

std::byte* CudaCopyEngine::alloc_pinned(uint64_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), fmt::format("cudaHostAlloc of {} pinned bytes", bytes), device_);
  return static_cast<std::byte*>(p);
}

void CudaCopyEngine::free_pinned(std::byte* p) noexcept { cudaFreeHost(p); }

std::byte* CudaCopyEngine::alloc_device(uint64_t bytes) {
  check(cudaSetDevice(device_), "cudaSetDevice", device_);
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), fmt::format("cudaMalloc of {} bytes", bytes), device_);
  return static_cast<std::byte*>(p);
}

void CudaCopyEngine::free_device(std::byte* p) noexcept {
  cudaSetDevice(device_);
  cudaFree(p);
}

cudaEvent_t CudaCopyEngine::take_event() {
  {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      cudaEvent_t e = spare_.back();
      spare_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", device_);
  return e;
}

uint64_t CudaCopyEngine::copy_async(std::byte* dst, const std::byte* src, uint64_t n, unsigned stream) {
  check(cudaSetDevice(device_), "cudaSetDevice", device_);  // per host thread: readers are the engine's threads
  cudaStream_t s = streams_[stream % streams_.size()];
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s), fmt::format("cudaMemcpyAsync of {} bytes", n), device_);
  cudaEvent_t e = take_event();
  check(cudaEventRecord(e, s), "cudaEventRecord", device_);
  std::lock_guard lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  pending_.emplace(ticket, e);
  return ticket;
}

void CudaCopyEngine::wait(uint64_t ticket) {
  cudaEvent_t e = nullptr;
  {
    std::lock_guard lock(mutex_);
    const auto it = pending_.find(ticket);
    if (it == pending_.end()) return;
    e = it->second;
    pending_.erase(it);
  }
  const cudaError_t status = cudaEventSynchronize(e);
  {
    std::lock_guard lock(mutex_);
    spare_.push_back(e);
  }
  check(status, "a host-to-device copy", device_);
}

}  // namespace wl
