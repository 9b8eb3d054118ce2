#include "core/io_probe.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "core/uring_queue.hpp"
#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

constexpr uint64_t kMaxRegion = 64ull << 20;  // one timed region of a probe, at most
constexpr uint64_t kMinFile = 32ull << 20;    // smaller files are not worth a probe
constexpr uint64_t kHuge = 2ull << 20;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Anonymous memory as the engine's destinations get it: 2 MiB-aligned, not yet touched.
struct FreshMemory {
  explicit FreshMemory(uint64_t n) : bytes(n + kHuge) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    if (!base) return;
    aligned = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) / kHuge * kHuge);
  }
  ~FreshMemory() {
    if (base) ::munmap(base, bytes);
  }
  uint64_t bytes;
  std::byte* base = nullptr;
  std::byte* aligned = nullptr;
};

// The remembered profiles, one JSON object: {"storage": {device: {...}}, "memory": {kernel: {...}}}.
std::mutex profile_mutex;

nlohmann::json read_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();  // a damaged profile is measured again
}

void remember(const std::string& path, const char* section, const std::string& key, const nlohmann::json& value) {
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    nlohmann::json j = read_profile(path);
    j[section][key] = value;
    const std::string text = j.dump(2) + "\n";
    AtomicFileWriter out(path);
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::exception&) {
    // Unwritable cache: the probe is simply taken again next time.
  }
}

std::optional<nlohmann::json> recall(const std::string& path, const char* section, const std::string& key) {
  const nlohmann::json j = read_profile(path);
  if (j.contains(section) && j[section].is_object() && j[section].contains(key)) return j[section][key];
  return std::nullopt;
}

// Seconds the I/O engine takes to read [offset, offset + n) of the file into fresh memory in
// `mode` (its threads, chunks and hints, as a load reads), converted to `to`; nullopt if it fails.
std::optional<double> timed_engine_read(const std::string& path, uint64_t offset, uint64_t n, IoMode mode,
                                        bool prefault, DType to = DType::F32) {
  FreshMemory dst(n);
  if (!dst.base) return std::nullopt;
  TensorInfo t;
  t.name = "io probe";
  t.shape = {n / 4};
  t.dtype = DType::F32;
  t.offset = offset;
  t.nbytes = n;
  const WeightSource source("raw", path, Catalogue{{path}, {t}, {}});
  IoOptions io;
  io.mode = mode;
  io.prefault = prefault;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    source.read_all({{&source.tensors()[0], Slice{}, to, dst.aligned}}, io);
    return seconds_since(t0);
  } catch (const Error&) {
    return std::nullopt;
  }
}

void drop_cached(const std::string& path, uint64_t offset, uint64_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Regions around the file's middle (a twelfth of the file each, at most kMaxRegion), each way in
// turn (direct, buffered, and uring where the kernel allows io_uring), each dropped from the page
// cache first; the best of three each (a machine's noise only ever slows a read down).
std::optional<StorageProbe> measure_storage(const std::string& path, uint64_t size) {
  const bool uring = uring_refusal() == 0;
  const std::vector<IoMode> ways = uring ? std::vector<IoMode>{IoMode::Direct, IoMode::Pread, IoMode::Uring}
                                         : std::vector<IoMode>{IoMode::Direct, IoMode::Pread};
  const uint64_t regions = 3 * ways.size();
  const uint64_t region = std::min(kMaxRegion, size / 12 / kHuge * kHuge);
  const uint64_t start = (size / 2 - regions * region / 2) / kHuge * kHuge;
  std::vector<double> best(ways.size(), 1e9);
  for (uint64_t i = 0; i < regions; ++i) {
    const uint64_t offset = start + i * region;
    drop_cached(path, offset, region);
    const std::optional<double> s = timed_engine_read(path, offset, region, ways[i % ways.size()], false);
    if (!s) return std::nullopt;
    best[i % ways.size()] = std::min(best[i % ways.size()], *s);
  }
  return StorageProbe{region / best[0] / 1e9, region / best[1] / 1e9, uring ? region / best[2] / 1e9 : 0};
}

// The file's first bytes (at most kMaxRegion, cached by a first read) into fresh memory each of
// the eight ways, in turn, three rounds, the best of each.
std::optional<MemoryProbe> measure_memory(const std::string& path, uint64_t size) {
  const uint64_t n = std::min(kMaxRegion, size / kHuge * kHuge);
  if (!timed_engine_read(path, 0, n, IoMode::Pread, false)) return std::nullopt;
  MemoryProbe probe;
  for (const bool converts : {false, true})
    for (const IoMode mode : {IoMode::Pread, IoMode::Mmap})
      for (const bool prefault : {true, false}) (converts ? probe.converting : probe.raw).push_back({mode, prefault, 0});
  for (int round = 0; round < 3; ++round)
    for (const bool converts : {false, true})
      for (MemoryProbe::Way& way : converts ? probe.converting : probe.raw) {
        const std::optional<double> s = timed_engine_read(path, 0, n, way.mode, way.prefault, converts ? DType::BF16 : DType::F32);
        if (!s) return std::nullopt;
        way.gbps = std::max(way.gbps, n / *s / 1e9);
      }
  return probe;
}

nlohmann::json ways_json(const std::vector<MemoryProbe::Way>& ways) {
  nlohmann::json j = nlohmann::json::object();
  for (const MemoryProbe::Way& w : ways) j[fmt::format("{}{}", io_mode_name(w.mode), w.prefault ? " prefault" : "")] = w.gbps;
  return j;
}

// The four ways of one kind from the profile; empty when any is missing (an older profile).
std::vector<MemoryProbe::Way> ways_from(const nlohmann::json& j) {
  std::vector<MemoryProbe::Way> out;
  for (const IoMode mode : {IoMode::Pread, IoMode::Mmap})
    for (const bool prefault : {true, false}) {
      const std::string key = fmt::format("{}{}", io_mode_name(mode), prefault ? " prefault" : "");
      if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return {};
      out.push_back({mode, prefault, j[key].get<double>()});
    }
  return out;
}

}  // namespace

std::string io_profile_path() {
  if (const char* p = std::getenv("WL_IO_PROFILE"); p && *p) return std::string(p) == "off" ? "" : p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/weightloader/io-profile.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/weightloader/io-profile.json";
  return "";
}

std::optional<StorageProbe> storage_probe(const ByteSource& file, bool measure) {
  const std::string profile = io_profile_path();
  struct stat st{};
  if (profile.empty() || file.kind() != SourceKind::LocalFile || file.size() < kMinFile || !file.supports_direct() ||
      ::stat(file.name().c_str(), &st) != 0)
    return std::nullopt;
  const std::string device = fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
  std::lock_guard lock(profile_mutex);
  // A profile from before io=uring (no uring_gbps) is measured again.
  if (auto j = recall(profile, "storage", device); j && j->is_object() && j->contains("uring_gbps"))
    return StorageProbe{j->value("direct_gbps", 0.0), j->value("buffered_gbps", 0.0), j->value("uring_gbps", 0.0)};
  if (!measure) return std::nullopt;
  const std::optional<StorageProbe> p = measure_storage(file.name(), file.size());
  if (p)
    remember(profile, "storage", device,
             {{"direct_gbps", p->direct_gbps}, {"buffered_gbps", p->buffered_gbps}, {"uring_gbps", p->uring_gbps}});
  return p;
}

std::string memory_profile_key() {
  utsname u{};
  ::uname(&u);
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp_mode;
  std::getline(thp, thp_mode);
  return fmt::format("{} thp {} unadvised", u.release, thp_mode);
}

std::optional<MemoryProbe> memory_probe(const ByteSource& file, bool measure) {
  const std::string profile = io_profile_path();
  if (profile.empty() || file.kind() != SourceKind::LocalFile || file.size() < kMinFile || !file.mapping()) return std::nullopt;
  const std::string key = memory_profile_key();
  std::lock_guard lock(profile_mutex);
  if (auto j = recall(profile, "memory", key)) {
    MemoryProbe p{ways_from((*j)["raw"]), ways_from((*j)["converting"])};
    if (!p.raw.empty() && !p.converting.empty()) return p;
  }
  if (!measure) return std::nullopt;
  const std::optional<MemoryProbe> p = measure_memory(file.name(), file.size());
  if (p) remember(profile, "memory", key, {{"raw", ways_json(p->raw)}, {"converting", ways_json(p->converting)}});
  return p;
}

MemoryProbe::Way MemoryProbe::best(bool converts) const {
  const std::vector<Way>& ways = converts ? converting : raw;
  Way chosen = ways.front();  // pread, prefaulted: the default
  for (const Way& w : ways)
    if (w.gbps > 1.05 * chosen.gbps) chosen = w;
  return chosen;
}

bool MemoryProbe::prefault(IoMode mode, bool converts) const {
  double with = 0, without = 0;
  for (const Way& w : converts ? converting : raw)
    if (w.mode == mode) (w.prefault ? with : without) = w.gbps;
  return !(without > 1.05 * with);
}

}  // namespace wl
