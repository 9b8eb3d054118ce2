// Decoders' side tensors (Decoder::side_reads: a quantized layer's scales, zero points, g_idx) read
// with the data they decode: which decoders of a batch of reads still wait for theirs, the requests
// that read them (planned with the data: core/io_plan.hpp), and each decoder handed its values
// once they are read.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

class SideReads {
 public:
  // The decoders of `requests` that have not had their side tensors yet, each once, with room for
  // the values (heap memory, whatever the requests' destination). `files`, the catalogue's (which
  // must outlive this), names a side tensor's file when its decoder refuses the values.
  SideReads(const std::vector<ReadRequest>& requests, const std::vector<std::string>& files);

  bool empty() const { return waiting_.empty(); }
  // Whether every side tensor is one the planner cuts into chunks (raw, contiguous, in stored row
  // order, whole): else they are read in a plan of their own, first.
  bool plannable() const;
  // Every side read, in the order of the waiting decoders.
  std::vector<ReadRequest> requests() const;
  // The side reads, then `data`; `is_side[i]` is set for the side reads among them.
  std::vector<ReadRequest> with(const std::vector<ReadRequest>& data, std::vector<char>& is_side) const;
  // Whether `d` waits for side tensors read here.
  bool waits(const Decoder* d) const { return index_.count(d) != 0; }
  // Hands `d` the values of its side tensors, which must all have been read (nothing when `d` does
  // not wait here; a decoder takes them once).
  void prepare(const Decoder* d) const;
  void prepare_all() const;

 private:
  struct Waiting {
    const Decoder* decoder;
    std::vector<TensorView> values;  // in side_reads() order
  };
  // Hands `w` its values; a refusal that names one of its side tensors (but no file) names its file.
  void hand(const Waiting& w) const;

  std::vector<Waiting> waiting_;
  std::unordered_map<const Decoder*, size_t> index_;
  const std::vector<std::string>* files_;
};

// Decoders without side tensors are prepared with none before any read, outside the reader
// threads: a type nobody decodes refuses here, naming file and tensor.
void prepare_plain_decoders(const std::vector<ReadRequest>& requests);

}  // namespace wl
