#include "weightloader/engine/mpi.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

namespace {

// Large buffers go in pieces: MPI counts are ints.
constexpr size_t kMaxChunk = size_t(1) << 30;

void check(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw Error(ErrorCode::Io, fmt::format("{} failed: {}", what, std::string(text, length)));
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    finalize_ = true;
  }
  init(MPI_COMM_WORLD);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) { init(comm); }

void MpiCommunicator::init(MPI_Comm comm) {
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  int rank = 0, size = 1, local = 1;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  MPI_Comm host;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host), "MPI_Comm_split_type");
  MPI_Comm_size(host, &local);
  MPI_Comm_free(&host);
  rank_ = unsigned(rank);
  size_ = unsigned(size);
  local_size_ = unsigned(local);
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (finalize_) MPI_Finalize();
}

void MpiCommunicator::all_reduce_sum(float* data, size_t n) {
  gathered_.resize(n * size_);
  all_gather(data, n * sizeof(float), gathered_.data());
  for (size_t i = 0; i < n; ++i) {
    float s = gathered_[i];
    for (unsigned r = 1; r < size_; ++r) s += gathered_[r * n + i];
    data[i] = s;
  }
}

void MpiCommunicator::all_gather(const void* in, size_t bytes, void* out) {
  if (bytes <= kMaxChunk) {
    check(MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm_), "MPI_Allgather");
    return;
  }
  // Rank r's bytes go to out + r * bytes: one broadcast per rank and piece.
  for (unsigned r = 0; r < size_; ++r) {
    std::byte* at = static_cast<std::byte*>(out) + r * bytes;
    if (r == rank_) std::copy_n(static_cast<const std::byte*>(in), bytes, at);
    broadcast(at, bytes, r);
  }
}

void MpiCommunicator::broadcast(void* data, size_t bytes, unsigned root) {
  for (size_t done = 0; done < bytes; done += kMaxChunk)
    check(MPI_Bcast(static_cast<std::byte*>(data) + done, int(std::min(kMaxChunk, bytes - done)), MPI_BYTE, int(root), comm_), "MPI_Bcast");
}

void MpiCommunicator::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiCommunicator::abort(const std::string& why) {
  std::fprintf(stderr, "weightloader: rank %u of %u failed, ending every rank: %s\n", rank_, size_, why.c_str());
  std::fflush(stderr);
  MPI_Abort(comm_, 1);
  std::abort();  // MPI_Abort does not return; if it did, this rank must still not continue
}

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

}  // namespace wl
