// How tensor-parallel ranks combine (the engine's only contact with other ranks). One forward pass
// runs over any implementation: the ranks of one process (threads, in_process_group) or one rank
// per process (MPI, the optional weightloader_mpi component, weightloader/engine/mpi.hpp).
//
// Every rank calls the same collectives in the same order with the same sizes. A communicator is
// used by one thread at a time (its rank's). Collectives are deterministic: all_reduce_sum adds the
// ranks' values in rank order, so every implementation gives every rank the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weightloader/export.hpp"

namespace wl {

class WL_API Communicator {
 public:
  virtual ~Communicator() = default;
  virtual unsigned rank() const = 0;
  virtual unsigned size() const = 0;
  // data[i] becomes the sum of every rank's data[i], added in rank order (rank 0 first).
  virtual void all_reduce_sum(float* data, size_t n) = 0;
  // Every rank contributes `bytes` bytes at `in`; `out` (size() * bytes) receives rank r's at r * bytes.
  virtual void all_gather(const void* in, size_t bytes, void* out) = 0;
  // `bytes` bytes at `data` on `root` are copied to `data` on every rank.
  virtual void broadcast(void* data, size_t bytes, unsigned root) = 0;
  virtual void barrier() = 0;
  // Ends every rank's participation after an unrecoverable failure on this one (a rank that stops
  // mid-collective would leave the others waiting forever). MPI ends the job; the ranks of one
  // process make the others' pending and later collectives throw.
  virtual void abort(const std::string& why) = 0;
  // Makes the group usable again after an abort, once every rank of this process has stopped
  // using it (the ranks of one process; across processes an abort has ended the job).
  virtual void recover() {}
};

// Every rank's string, in rank order (lengths may differ).
WL_API std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine);
// `root`'s string, on every rank (the others' `mine` is ignored).
WL_API std::string broadcast_string(Communicator& comm, const std::string& mine, unsigned root);

// `size` ranks held by one process: communicator r is rank r's, to be used from its own thread.
// They share one group; it lives as long as any of them.
WL_API std::vector<std::unique_ptr<Communicator>> in_process_group(unsigned size);

}  // namespace wl
