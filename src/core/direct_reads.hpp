// O_DIRECT reads of any byte range into memory of any alignment: the I/O engine's reads in
// io=direct and io=uring alike, cut the same way and issued one at a time or many in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "weightloader/byte_source.hpp"

namespace wl {

class UringQueue;

// io=uring: reads of at most this many bytes (in place, or a bounce slot's), so that one range is
// many reads in flight and a bounced piece is copied out while the next ones are read.
constexpr uint64_t kUringPieceBytes = 1u << 20;
// io=uring: reads one reader thread keeps in flight on its ring at most.
constexpr unsigned kUringDepth = 32;

// Reads [offset, offset + length) of `source` into `out`. Where `out` and `offset` share their
// offset within a block, the aligned middle is read straight into place and only the head and tail
// go through the bounce area; otherwise every piece goes through it and is copied out.
// `bounce()` gives the bounce area (bounce_bytes, aligned, at least 2 blocks), asked for only when
// a piece needs it. Without `queue` (io=direct): one read at a time (ByteSource::read_direct), the
// aligned middle in one, each bounced piece as large as the bounce area. With it (io=uring): pieces
// of at most kUringPieceBytes, the bounce area cut into slots, up to the queue's depth in flight
// (ByteSource::queue_direct), each bounced piece copied out as soon as it is read.
// False when the source ends before offset + length (the caller names what was cut short). Errors
// name the source, with the errno. Nothing is left in flight once it returns or throws.
bool read_direct_range(const ByteSource& source, uint64_t offset, uint64_t length, std::byte* out,
                       const std::function<std::byte*()>& bounce, uint64_t bounce_bytes, UringQueue* queue);

}  // namespace wl
