// main() of the MPI tests: MPI is initialised before the tests and finalised after them; rank 0
// prints GoogleTest's report and the others their failures, and every rank exits non-zero when any of its tests failed (mpirun
// then exits non-zero too).
#include <gtest/gtest.h>

#include "mpi_world.hpp"

namespace wl::test {

namespace {
std::shared_ptr<MpiCommunicator>& world_slot() {
  static std::shared_ptr<MpiCommunicator> world;
  return world;
}
}  // namespace

std::shared_ptr<MpiCommunicator> mpi_world() { return world_slot(); }

}  // namespace wl::test

int main(int argc, char** argv) {
  wl::test::world_slot() = std::make_shared<wl::MpiCommunicator>();
  ::testing::InitGoogleTest(&argc, argv);
  if (wl::test::mpi_world()->rank() != 0) GTEST_FLAG_SET(brief, true);  // the other ranks print their failures only
  const int status = RUN_ALL_TESTS();
  wl::test::world_slot().reset();  // MPI_Finalize
  return status;
}
