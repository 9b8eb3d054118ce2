// verify=sha256: the digest a file's bytes should have, and what says so.
#pragma once

#include <optional>
#include <string>

#include "weightloader/byte_source.hpp"

namespace wl {

struct ExpectedDigest {
  std::string hex;   // lowercase sha256
  std::string from;  // what names it, for errors
};

// The first of: a remote object's ETag when it is a sha256 (the hub's LFS oid); a Hugging Face
// cache blob's name (a snapshot's file links to blobs/<sha256>); a sidecar `<file>.sha256` (its
// first word); a `SHA256SUMS` beside the file, as sha256sum writes it (`<hex>  <name>` or
// `<hex> *<name>`). nullopt when nothing names it. InvalidArgument for a sidecar or SHA256SUMS
// line that is not a sha256.
std::optional<ExpectedDigest> expected_sha256(const ByteSource& source);

}  // namespace wl
