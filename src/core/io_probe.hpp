// io=auto's evidence: how fast this machine's storage and memory are, measured on the files being
// loaded, once per device, and remembered (so that auto picks what is fastest here, not by rule).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/source.hpp"

namespace wl {

// One cold read of a device, each way, on the same kind of regions of one file.
struct StorageProbe {
  double direct_gbps = 0;    // O_DIRECT reads, one at a time per thread (io=direct)
  double buffered_gbps = 0;  // positioned reads through the page cache (with its read-ahead)
  double uring_gbps = 0;     // O_DIRECT reads on io_uring (io=uring); 0: the kernel refused io_uring then
};

// Reads of page-cached bytes into fresh memory, each way a warm load can take: pread or mmap,
// prefaulted or faulting as the copies go, straight copies or converting ones (F32 to BF16).
struct MemoryProbe {
  struct Way {
    IoMode mode = IoMode::Pread;
    bool prefault = true;
    double gbps = 0;
  };
  std::vector<Way> raw, converting;  // the four ways each
  // The fastest way, or the default (pread, prefaulted) unless another beats it by over 5%.
  Way best(bool converts) const;
  // The faster of prefaulting or not for `mode`, the same way.
  bool prefault(IoMode mode, bool converts) const;
};

// Where profiles are remembered: $WL_IO_PROFILE (a file; "off": never probe, auto by rule), else
// $XDG_CACHE_HOME/weightloader/io-profile.json, else ~/.cache/weightloader/io-profile.json.
// Empty when probing is off or no home is known.
std::string io_profile_path();

// The storage profile of the device holding `file` (a local file), measured now if the profile
// does not remember that device (or remembers it from before io=uring): the I/O engine reads nine
// regions around the file's middle (a twelfth of the file each, at most 64 MiB; each dropped from
// the page cache first), taking turns O_DIRECT, buffered and io_uring (six regions, without
// io_uring, where the kernel refuses it), the best of three each; nullopt when probing is off, the
// file is under 32 MiB or refuses O_DIRECT. measure=false: only what the profile remembers (a plan
// reads nothing).
std::optional<StorageProbe> storage_probe(const ByteSource& file, bool measure = true);

// The profile's key for this machine's memory: what changes the memory probe's answer (the kernel
// release, the transparent huge page mode, and "unadvised": profiles measured while the engine still
// asked for huge pages, until 2026-12, are measured again).
std::string memory_profile_key();

// This machine's memory profile, measured now if the profile does not remember it: the I/O engine
// reads the first 64 MiB of `file` (page-cached by a first read) into fresh memory each of the
// eight ways, three times each, keeping the best; nullopt when probing is off, the file is under
// 32 MiB or cannot be mapped. measure=false: only what the profile remembers.
std::optional<MemoryProbe> memory_probe(const ByteSource& file, bool measure = true);

}  // namespace wl
