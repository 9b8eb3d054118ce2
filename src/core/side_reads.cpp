#include "core/side_reads.hpp"

#include <algorithm>

#include "core/named_errors.hpp"

namespace wl {

namespace {

ReadRequest side_request(const SideRead& s, const TensorView& into) { return ReadRequest{&s.tensor, Slice{}, s.as, into.raw()}; }

}  // namespace

SideReads::SideReads(const std::vector<ReadRequest>& requests, const std::vector<std::string>& files) : files_(&files) {
  for (const ReadRequest& r : requests) {
    const Decoder* d = r.tensor->decoder.get();
    if (!d || d->side_reads().empty() || d->prepared() || index_.count(d)) continue;
    Waiting w{d, {}};
    for (const SideRead& s : d->side_reads()) w.values.push_back(TensorView::empty(s.as, s.tensor.shape));
    index_.emplace(d, waiting_.size());
    waiting_.push_back(std::move(w));
  }
}

bool SideReads::plannable() const {
  return std::all_of(waiting_.begin(), waiting_.end(), [](const Waiting& w) {
    const std::span<const SideRead> side = w.decoder->side_reads();
    return std::all_of(side.begin(), side.end(), [](const SideRead& s) {
      return !s.tensor.decoder && s.tensor.strides.empty() && s.tensor.row_order.empty() && s.tensor.parts.empty();
    });
  });
}

std::vector<ReadRequest> SideReads::requests() const {
  std::vector<ReadRequest> out;
  for (const Waiting& w : waiting_)
    for (size_t i = 0; i < w.values.size(); ++i) out.push_back(side_request(w.decoder->side_reads()[i], w.values[i]));
  return out;
}

std::vector<ReadRequest> SideReads::with(const std::vector<ReadRequest>& data, std::vector<char>& is_side) const {
  std::vector<ReadRequest> out = requests();
  is_side.assign(out.size(), 1);
  is_side.resize(out.size() + data.size(), 0);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void SideReads::prepare(const Decoder* d) const {
  const auto it = index_.find(d);
  if (it == index_.end()) return;
  hand(waiting_[it->second]);
}

void SideReads::prepare_all() const {
  for (const Waiting& w : waiting_) hand(w);
}

void SideReads::hand(const Waiting& w) const {
  try {
    w.decoder->prepare(w.values);
  } catch (const Error& e) {
    if (!e.file().empty()) throw;
    for (const SideRead& s : w.decoder->side_reads())
      if (s.tensor.name == e.tensor() && s.tensor.source < files_->size()) throw in_file(e, (*files_)[s.tensor.source]);
    throw;
  }
}

void prepare_plain_decoders(const std::vector<ReadRequest>& requests) {
  for (const ReadRequest& r : requests)
    if (r.tensor->decoder && r.tensor->decoder->side_reads().empty()) r.tensor->decoder->prepare({});
}

}  // namespace wl
