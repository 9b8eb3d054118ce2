// Bad input never allocates beyond what the file justifies: the CLI loads every hostile file
// under an address-space limit far below what their claimed sizes would need, and each ends in a
// clean error (status 1, a message with its code), never an abort, a kill or std::bad_alloc.
#include <gtest/gtest.h>

#include "hostile/hostile_files.hpp"
#include "hostile/hostile_util.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define WL_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WL_UNDER_ASAN 1
#endif
#endif

namespace wl::test {
namespace {

// Virtual memory for the whole CLI process (code, thread stacks, malloc arenas included), with two
// reader threads and two malloc arenas whatever the machine's core count. A tiny checkpoint loads
// within it (checked first; it needs under 64 MiB); the hostile files claim gigabytes.
constexpr const char* kLimitKiB = "262144";  // 256 MiB

TEST(HostileMemory, EveryFileFailsCleanlyUnderAnAddressSpaceLimit) {
#ifdef WL_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space, so no ulimit -v can hold; "
                  "the plain build runs this test";
#endif
  const std::string limit = std::string("ulimit -v ") + kLimitKiB + "; export MALLOC_ARENA_MAX=2; ";
  const std::string options = " --kw concurrency=2";
  TempDir good;
  const CliResult synth = run_shell("exec \"$WL\" synth \"" + good.file("m") + "\" --preset tiny");
  ASSERT_EQ(synth.status, 0) << synth.out;
  const CliResult control = run_shell(limit + "exec \"$WL\" load \"" + good.file("m") + "\" --dtype bf16" + options);
  ASSERT_EQ(control.status, 0) << "a valid tiny checkpoint must load under the limit: " << control.out;

  TempDir dir;
  for (const HostileFile& f : write_hostile_files(dir)) {
    const CliResult r = run_shell(limit + "exec \"$WL\" load \"" + f.path + "\" --dtype f32" + options);
    EXPECT_EQ(r.signal, 0) << f.path << " killed by signal " << r.signal << ": " << r.out;
    EXPECT_EQ(r.status, 1) << f.path << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("[") + std::string(error_code_name(f.code)) + "]"), std::string::npos)
        << f.path << ": " << r.out;
    EXPECT_EQ(r.out.find("bad_alloc"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace wl::test
