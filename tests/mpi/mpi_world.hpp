// The MPI world of the MPI test program (tests/mpi), which mpirun starts once per rank: every rank
// runs every test, in the same order, so that their collectives meet.
#pragma once

#include <memory>

#include "weightloader/engine/mpi.hpp"

namespace wl::test {

std::shared_ptr<MpiCommunicator> mpi_world();

}  // namespace wl::test
