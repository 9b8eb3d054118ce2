// io=auto's probes: taken once per device (and per kernel for memory), remembered in the profile
// file, off with WL_IO_PROFILE=off, re-taken when the profile is damaged or older; and the engine's
// auto choices following what the profile says (io_uring only where the kernel allows it).
#include "core/io_probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/file.hpp"
#include "support/refused_io_uring.hpp"
#include "test_util.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

constexpr uint64_t kBig = 64ull << 20;  // probed in 8 MiB regions

// WL_IO_PROFILE set for the test's lifetime, then restored.
class ProfileEnv {
 public:
  explicit ProfileEnv(const std::string& value) {
    if (const char* v = std::getenv("WL_IO_PROFILE")) saved_ = v;
    ::setenv("WL_IO_PROFILE", value.c_str(), 1);
  }
  ~ProfileEnv() {
    if (saved_) ::setenv("WL_IO_PROFILE", saved_->c_str(), 1);
    else ::unsetenv("WL_IO_PROFILE");
  }

 private:
  std::optional<std::string> saved_;
};

std::string big_file(const test::TempDir& dir) {
  const std::string path = dir.file("big.bin");
  std::vector<float> values(kBig / sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 1000);
  test::write_bytes(path, std::string(reinterpret_cast<const char*>(values.data()), kBig));
  return path;
}

bool direct_supported(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump();
}

std::string device_key(const std::string& path) {
  struct stat st{};
  ::stat(path.c_str(), &st);
  return fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
}

// A storage profile for the device holding `path`: GB/s of O_DIRECT, buffered and io_uring reads.
nlohmann::json storage_profile(const std::string& path, double direct, double buffered, double uring) {
  return {{"storage", {{device_key(path), {{"direct_gbps", direct}, {"buffered_gbps", buffered}, {"uring_gbps", uring}}}}}};
}

// A cold (or warm) auto read of the whole file as one F32 tensor.
ReadStats auto_read(const std::string& path, bool cold) {
  if (cold) evict(path);
  TensorInfo t;
  t.name = "w";
  t.shape = {kBig / 4};
  t.nbytes = kBig;
  WeightSource src("big", path, Catalogue{{path}, {t}, {}});
  std::vector<float> out(kBig / 4);
  const ReadStats s = src.read_all({{&src.tensors()[0], Slice{}, DType::F32, out.data()}}, IoOptions{});
  EXPECT_EQ(out[999], 999.0f);
  EXPECT_EQ(out.back(), float((kBig / 4 - 1) % 1000));
  return s;
}

// Each test's own folder, profile (WL_IO_PROFILE, set for the test) and 64 MiB file.
class IoProbe : public ::testing::Test {
 protected:
  test::TempDir dir;
  const std::string profile = dir.file("io-profile.json");
  const ProfileEnv env{profile};
  const std::string path = big_file(dir);
};

// The same where the file's filesystem takes O_DIRECT; skipped elsewhere.
class IoProbeDirect : public IoProbe {
 protected:
  void SetUp() override {
    if (!direct_supported(path)) GTEST_SKIP() << "no O_DIRECT on " << path;
  }
};
using IoProbeDirectDeathTest = IoProbeDirect;

TEST_F(IoProbe, OffMeansNoProbeAndAutoByRule) {
  const ProfileEnv off("off");
  EXPECT_EQ(io_profile_path(), "");
  File file(path);
  EXPECT_FALSE(storage_probe(file));
  EXPECT_FALSE(memory_probe(file));
}

TEST_F(IoProbeDirect, MeasuresOncePerDeviceAndRemembers) {
  const std::string cached_profile = dir.file("cache/io-profile.json");  // its folder made by the probe
  const ProfileEnv in_cache(cached_profile);
  File file(path);
  const std::optional<StorageProbe> first = storage_probe(file);
  ASSERT_TRUE(first);
  EXPECT_GT(first->direct_gbps, 0);
  EXPECT_GT(first->buffered_gbps, 0);
  if (test::io_uring_allowed()) {
    EXPECT_GT(first->uring_gbps, 0);
  }
  const nlohmann::json saved = read_json(cached_profile);
  EXPECT_EQ(saved["storage"][device_key(path)]["direct_gbps"].get<double>(), first->direct_gbps);
  EXPECT_EQ(saved["storage"][device_key(path)]["uring_gbps"].get<double>(), first->uring_gbps);
  // Remembered: a second probe measures nothing and returns what the profile says.
  nlohmann::json edited = saved;
  edited["storage"][device_key(path)]["direct_gbps"] = 123.0;
  write_json(cached_profile, edited);
  EXPECT_EQ(storage_probe(file)->direct_gbps, 123.0);

  const std::optional<MemoryProbe> memory = memory_probe(file);
  ASSERT_TRUE(memory);
  ASSERT_EQ(memory->raw.size(), 4u);
  ASSERT_EQ(memory->converting.size(), 4u);
  for (const auto* ways : {&memory->raw, &memory->converting})
    for (const MemoryProbe::Way& w : *ways) EXPECT_GT(w.gbps, 0) << io_mode_name(w.mode) << w.prefault;
  const nlohmann::json saved_memory = read_json(cached_profile)["memory"][memory_profile_key()];
  EXPECT_EQ(saved_memory["converting"]["mmap prefault"].get<double>(), memory->converting[2].gbps);
  EXPECT_EQ(saved_memory["raw"]["pread"].get<double>(), memory->raw[1].gbps);
  EXPECT_EQ(read_json(cached_profile)["storage"][device_key(path)]["direct_gbps"].get<double>(), 123.0);  // kept
}

TEST_F(IoProbeDirect, ADamagedProfileIsMeasuredAgain) {
  test::write_bytes(profile, "{\"storage\": [1, 2");
  File file(path);
  ASSERT_TRUE(storage_probe(file));
  EXPECT_TRUE(read_json(profile)["storage"].contains(device_key(path)));
}

TEST_F(IoProbeDirect, AutoReadsColdFilesTheWayTheDeviceMeasuredFaster) {
  write_json(profile, storage_profile(path, 1.0, 2.5, 1.2));
  ReadStats s = auto_read(path, true);
  EXPECT_EQ(s.mode, IoMode::Pread) << s.mode_reason;
  EXPECT_NE(s.mode_reason.find("measured O_DIRECT 1.00 GB/s, buffered 2.50 GB/s, O_DIRECT on io_uring 1.20 GB/s"),
            std::string::npos)
      << s.mode_reason;
  write_json(profile, storage_profile(path, 3.0, 2.5, 3.1));  // io_uring within 5%: one read at a time stays
  s = auto_read(path, true);
  EXPECT_EQ(s.mode, IoMode::Direct) << s.mode_reason;
  if (!test::io_uring_allowed()) return;
  write_json(profile, storage_profile(path, 3.0, 2.5, 3.5));
  s = auto_read(path, true);
  EXPECT_EQ(s.mode, IoMode::Uring) << s.mode_reason;
  write_json(profile, storage_profile(path, 3.0, 4.0, 3.5));  // buffered clearly faster than either
  s = auto_read(path, true);
  EXPECT_EQ(s.mode, IoMode::Pread) << s.mode_reason;
}

TEST_F(IoProbeDirect, AStorageProfileFromBeforeUringIsMeasuredAgain) {
  write_json(profile, {{"storage", {{device_key(path), {{"direct_gbps", 123.0}, {"buffered_gbps", 2.5}}}}}});
  File file(path);
  const std::optional<StorageProbe> p = storage_probe(file);
  ASSERT_TRUE(p);
  EXPECT_NE(p->direct_gbps, 123.0);
  EXPECT_TRUE(read_json(profile)["storage"][device_key(path)].contains("uring_gbps"));
}

// Death test in its own process: a seccomp filter refusing io_uring cannot be undone.
TEST_F(IoProbeDirectDeathTest, AutoNeverPicksUringWhereTheKernelRefusesIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  write_json(profile, storage_profile(path, 1.0, 0.5, 3.0));  // io_uring measured fastest, elsewhere
  EXPECT_EXIT(
      {
        if (!test::refuse_io_uring(EPERM)) std::_Exit(2);
        const ReadStats s = auto_read(path, true);
        const bool passed_by = s.mode == IoMode::Direct &&
                               s.mode_reason.find("but io_uring is refused now: Operation not permitted") != std::string::npos;
        std::_Exit(passed_by && !::testing::Test::HasFailure() ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
  // Measured where the kernel refuses io_uring: the two other ways only, io_uring remembered as 0.
  ::unlink(profile.c_str());
  EXPECT_EXIT(
      {
        if (!test::refuse_io_uring(ENOSYS)) std::_Exit(2);
        File file(path);
        const std::optional<StorageProbe> p = storage_probe(file);
        std::_Exit(p && p->direct_gbps > 0 && p->uring_gbps == 0 && read_json(profile)["storage"][device_key(path)]["uring_gbps"] == 0.0 ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

// A memory profile: GB/s of pread prefaulted, pread, mmap prefaulted, mmap; the same for straight
// and converting reads.
nlohmann::json memory_profile(double pread_pf, double pread, double mmap_pf, double mmap) {
  const nlohmann::json ways = {{"pread prefault", pread_pf}, {"pread", pread}, {"mmap prefault", mmap_pf}, {"mmap", mmap}};
  return {{"memory", {{memory_profile_key(), {{"raw", ways}, {"converting", ways}}}}}};
}

TEST_F(IoProbe, AutoReadsCachedFilesTheWayTheMachineMeasuredFastest) {
  write_json(profile, memory_profile(7.0, 9.0, 6.0, 6.0));
  ReadStats s = auto_read(path, false);
  EXPECT_EQ(s.mode, IoMode::Pread) << s.mode_reason;
  EXPECT_NE(s.mode_reason.find("pread, no prefault: the fastest way measured here for straight reads"), std::string::npos)
      << s.mode_reason;
  write_json(profile, memory_profile(7.0, 6.0, 9.5, 6.0));
  s = auto_read(path, false);
  EXPECT_EQ(s.mode, IoMode::Mmap) << s.mode_reason;
  EXPECT_NE(s.mode_reason.find("mmap, prefault"), std::string::npos) << s.mode_reason;
  // Within 5% of the default, the default stays.
  write_json(profile, memory_profile(7.0, 7.2, 7.1, 6.0));
  s = auto_read(path, false);
  EXPECT_EQ(s.mode, IoMode::Pread) << s.mode_reason;
  EXPECT_NE(s.mode_reason.find("pread, prefault"), std::string::npos) << s.mode_reason;
}

TEST_F(IoProbe, AnOlderProfileIsMeasuredAgain) {
  File file(path);
  write_json(profile, {{"memory", {{memory_profile_key(), {{"prefault_gbps", 7.0}, {"fault_in_read_gbps", 9.0}}}}}});
  ASSERT_TRUE(memory_probe(file));
  EXPECT_TRUE(read_json(profile)["memory"][memory_profile_key()].contains("converting"));
}

}  // namespace
}  // namespace wl
