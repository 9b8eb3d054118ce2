// Tensor-parallel ranks as MPI processes (the optional `weightloader_mpi` component, built when
// CMake finds MPI; programs that link it see WL_WITH_MPI). Give one to LLMOptions::communicator and
// every process declares and reads only its rank's slice:
//
//   auto comm = std::make_shared<wl::MpiCommunicator>();   // MPI_Init unless the program did
//   wl::LLMOptions o;
//   o.model = "/shared/llama";
//   o.communicator = comm;
//   wl::LLM llm(o);                                          // rank comm->rank() of comm->size()
//   auto out = llm.generate("Once upon a time", params);     // every rank, same arguments
//
// Collectives run on the thread that constructed the communicator (MPI_THREAD_FUNNELED).
// all_reduce_sum gathers every rank's values and adds them in rank order (MPI_Allreduce's order
// is the library's choice), so results are bitwise those of the ranks of one process.
#pragma once

#include <mpi.h>

#include "weightloader/communicator.hpp"
#include "weightloader/export.hpp"

namespace wl {

class WL_API MpiCommunicator final : public Communicator {
 public:
  // MPI_COMM_WORLD; initialises MPI if the program has not (and then finalises it on destruction).
  MpiCommunicator();
  // A duplicate of the caller's communicator (MPI already initialised by the caller, who finalises it).
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  unsigned rank() const override { return rank_; }
  unsigned size() const override { return size_; }
  // Ranks on this host (MPI_COMM_TYPE_SHARED): the CLI shares the host's cores among them.
  unsigned local_size() const { return local_size_; }
  void all_reduce_sum(float* data, size_t n) override;
  void all_gather(const void* in, size_t bytes, void* out) override;
  void broadcast(void* data, size_t bytes, unsigned root) override;
  void barrier() override;
  // Prints "rank r of n: why" on stderr and ends the whole job (MPI_Abort); never returns.
  void abort(const std::string& why) override;

 private:
  void init(MPI_Comm comm);
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool finalize_ = false;
  unsigned rank_ = 0, size_ = 1, local_size_ = 1;
  std::vector<float> gathered_;
};

// Whether this process was started by mpirun/mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE, or the
// PMI_SIZE / PMIX_RANK of other launchers), so that a program can choose MPI without a flag.
WL_API bool launched_by_mpi();

}  // namespace wl
