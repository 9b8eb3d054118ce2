// Reports the source's stored bytes as the converter reads its tensors (ConvertOptions::progress).
#pragma once

#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {

class Tally {
 public:
  // `total`: the stored bytes the conversion reads (convert_scope), which add() counts up to.
  Tally(const WeightSource& s, const ProgressCallback& progress, uint64_t total) : source_(s), progress_(progress), total_(total) {}
  void add(const TensorInfo& t) {
    done_ += t.nbytes;
    if (progress_ && !progress_(done_, total_))
      throw Error(ErrorCode::Cancelled, "conversion cancelled by the progress callback", source_.file_of(t), t.name);
  }

 private:
  const WeightSource& source_;
  const ProgressCallback& progress_;
  uint64_t done_ = 0, total_;
};

}  // namespace wl
