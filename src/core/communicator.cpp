#include "weightloader/communicator.hpp"

#include <algorithm>
#include <cstring>

namespace wl {

std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine) {
  const unsigned n = comm.size();
  const uint64_t length = mine.size();
  std::vector<uint64_t> lengths(n);
  comm.all_gather(&length, sizeof length, lengths.data());
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = mine;
  padded.resize(longest);
  std::string all(longest * n, '\0');
  comm.all_gather(padded.data(), longest, all.data());
  std::vector<std::string> out(n);
  for (unsigned r = 0; r < n; ++r) out[r] = all.substr(r * longest, lengths[r]);
  return out;
}

std::string broadcast_string(Communicator& comm, const std::string& mine, unsigned root) {
  uint64_t length = mine.size();
  comm.broadcast(&length, sizeof length, root);
  std::string out = comm.rank() == root ? mine : std::string(length, '\0');
  comm.broadcast(out.data(), length, root);
  return out;
}

}  // namespace wl
