// The blobs of one snapshot a download fetches, under their cache locks, and the transfer that
// fetches them: several files and pieces of files at once (BlobDownload), then each checked and
// renamed into blobs/ and linked into the snapshot.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "remote/hub_download/blob_download.hpp"
#include "remote/hub_client.hpp"

namespace wl::remote {

// An exclusive flock on `path`, held for the object's life. Where the file system does not
// support locks it is not held: the partial files and the atomic rename keep the cache correct.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

struct BlobBatch {
  std::vector<HubFile> files;                         // every file asked for (two may share a blob)
  std::vector<std::unique_ptr<FileLock>> locks;       // one per blob, taken in the order of `files`
  std::vector<std::unique_ptr<BlobDownload>> blobs;   // the blobs not in the cache yet

  uint64_t missing_bytes() const;
  // The download of the blob `file` names; null when it was in the cache already.
  BlobDownload* download_of(const HubFile& file) const;
};

// Fetches every piece of every blob (`concurrency` transfers at once; the first failure stops
// them all and is thrown), and checks and renames each blob once its last piece is in.
void transfer(BlobBatch& batch, TransferProgress& progress, unsigned concurrency);

// snapshots/<commit>/<path> → ../../blobs/<etag> (one more ../ per folder in path), replacing a
// link that was there.
void link_into_snapshot(const std::filesystem::path& snapshot, const std::string& path, const std::string& etag);

}  // namespace wl::remote
