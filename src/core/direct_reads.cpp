#include "core/direct_reads.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/uring_queue.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

constexpr uint64_t kAlign = ByteSource::direct_alignment();

// One read of whole blocks, and what becomes of it.
struct Piece {
  uint64_t offset = 0;        // in the source, aligned
  std::byte* into = nullptr;  // the destination itself, or a bounce slot
  uint64_t span = 0;          // bytes asked for
  uint64_t need = 0;          // of which at least these must come (the rest lies past the range)
  uint64_t got = 0;
  std::byte* out = nullptr;   // bounced: `bytes` bytes at into + head are copied here once read
  uint64_t head = 0, bytes = 0;
};

class RangeReader {
 public:
  RangeReader(const ByteSource& source, uint64_t offset, uint64_t length, std::byte* out,
              const std::function<std::byte*()>& bounce, uint64_t bounce_bytes, UringQueue* queue)
      : source_(source),
        queue_(queue),
        bounce_(bounce),
        bounce_bytes_(bounce_bytes),
        // io=uring: slots of at most a piece, at least 4 where the area allows, each at least 2 blocks
        slot_bytes_(queue ? std::max(2 * kAlign, std::min(kUringPieceBytes, bounce_bytes / 4 / kAlign * kAlign))
                          : bounce_bytes),
        in_place_limit_(queue ? kUringPieceBytes : UINT64_MAX),
        same_phase_((reinterpret_cast<uintptr_t>(out) - offset) % kAlign == 0),
        offset_(offset),
        length_(length),
        out_(out),
        pieces_(queue ? queue->depth() : 1) {
    for (size_t i = pieces_.size(); i-- > 0;) free_pieces_.push_back(i);
  }
  ~RangeReader() { drain(); }
  RangeReader(const RangeReader&) = delete;
  RangeReader& operator=(const RangeReader&) = delete;

  bool run();

 private:
  bool cut(Piece& p);
  void issue(size_t i);
  void release(size_t i);
  void drain() noexcept;

  const ByteSource& source_;
  UringQueue* const queue_;
  const std::function<std::byte*()>& bounce_;
  const uint64_t bounce_bytes_, slot_bytes_, in_place_limit_;
  const bool same_phase_;
  uint64_t offset_, length_;  // what is left to cut
  std::byte* out_;
  std::vector<Piece> pieces_;  // by tag
  std::vector<size_t> free_pieces_;
  std::vector<std::byte*> free_slots_;
  bool slots_made_ = false;
  size_t in_flight_ = 0;
  std::optional<UringQueue::Completion> done_;  // io=direct: the read just made
};

// The next piece of what is left, or false when none can be cut now (nothing left, or every
// bounce slot in flight).
bool RangeReader::cut(Piece& p) {
  if (length_ == 0) return false;
  uint64_t n;
  if (same_phase_ && offset_ % kAlign == 0 && length_ >= kAlign) {
    n = std::min(length_ / kAlign * kAlign, in_place_limit_);
    p = Piece{offset_, out_, n, n};
  } else {
    if (!slots_made_) {
      std::byte* area = bounce_();
      for (uint64_t at = 0; at + slot_bytes_ <= bounce_bytes_; at += slot_bytes_) free_slots_.push_back(area + at);
      slots_made_ = true;
    }
    if (free_slots_.empty()) return false;
    const uint64_t start = offset_ / kAlign * kAlign, head = offset_ - start;
    n = std::min(length_, slot_bytes_ - head);  // later pieces then start on a block boundary
    if (same_phase_) n = std::min(n, kAlign - head);  // up to the next block boundary only
    p = Piece{start, free_slots_.back(), (head + n + kAlign - 1) / kAlign * kAlign, head + n, 0, out_, head, n};
    free_slots_.pop_back();
  }
  offset_ += n, out_ += n, length_ -= n;
  return true;
}

// Reads piece i from where it got to: queued (io=uring) or made now (io=direct).
void RangeReader::issue(size_t i) {
  Piece& p = pieces_[i];
  const uint64_t offset = p.offset + p.got, length = p.span - p.got;
  if (queue_)
    source_.queue_direct(*queue_, offset, p.into + p.got, length, i);
  else
    done_ = UringQueue::Completion{i, static_cast<int64_t>(source_.read_direct(offset, p.into + p.got, length))};
  ++in_flight_;
}

void RangeReader::release(size_t i) {
  if (pieces_[i].out) free_slots_.push_back(pieces_[i].into);
  free_pieces_.push_back(i);
}

bool RangeReader::run() {
  bool ended = false;  // the source ended before the range: what is in flight finishes, nothing more is cut
  for (;;) {
    for (Piece p; !ended && !free_pieces_.empty() && cut(p);) {
      const size_t i = free_pieces_.back();
      free_pieces_.pop_back();
      pieces_[i] = p;
      issue(i);
    }
    if (in_flight_ == 0) return !ended;
    const UringQueue::Completion c = queue_ ? queue_->wait(source_.name()) : *std::exchange(done_, std::nullopt);
    --in_flight_;
    Piece& p = pieces_[c.tag];
    if (c.result < 0) {
      const int err = static_cast<int>(-c.result);
      throw Error(ErrorCode::Io,
                  fmt::format("O_DIRECT read of {} bytes at offset {} through io_uring failed: {}", p.span - p.got,
                              p.offset + p.got, std::strerror(err)),
                  source_.name())
          .set_os_errno(err);
    }
    p.got += static_cast<uint64_t>(c.result);
    if (p.got < p.need && c.result > 0 && p.got % kAlign == 0) {  // short, but whole blocks: read on
      issue(c.tag);
      continue;
    }
    if (p.got < p.need)
      ended = true;
    else if (p.out)
      std::memcpy(p.out, p.into + p.head, p.bytes);
    release(c.tag);
  }
}

// The kernel may still write into the destination or the bounce area: wait for every read in
// flight before either can be let go (an error thrown with reads in flight).
void RangeReader::drain() noexcept {
  for (; queue_ && in_flight_ > 0; --in_flight_) {
    try {
      queue_->wait(source_.name());
    } catch (const Error&) {
      return;  // the kernel refuses to wait (it never does but for a bad ring): nothing more to do
    }
  }
}

}  // namespace

bool read_direct_range(const ByteSource& source, uint64_t offset, uint64_t length, std::byte* out,
                       const std::function<std::byte*()>& bounce, uint64_t bounce_bytes, UringQueue* queue) {
  return RangeReader(source, offset, length, out, bounce, bounce_bytes, queue).run();
}

}  // namespace wl
