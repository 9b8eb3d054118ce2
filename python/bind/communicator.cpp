// wl::Communicator implemented in Python (weightloader/_communicator.py: torch.distributed), and the
// C++ rank agreement (loaders/rank_agreement.hpp) over it, so that Python's ranks agree by the
// library's rule, with its messages and codes.
//
// A Python subclass of Communicator defines rank(), size(), all_gather(data: bytes) -> bytes (every
// rank's data, in rank order), broadcast(data: bytes, root) -> bytes (root's), barrier() and
// abort(why). all_reduce_sum is the library's, over all_gather (rank order, so every rank gets the
// same bits). An exception raised by a method comes out of the C++ call that made it as it was.
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "loaders/rank_agreement.hpp"
#include "weightloader/communicator.hpp"
#include "weightloader/error.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

class PythonCommunicator final : public Communicator {
 public:
  unsigned rank() const override { return call("rank").cast<unsigned>(); }
  unsigned size() const override { return call("size").cast<unsigned>(); }

  void all_reduce_sum(float* data, size_t n) override {
    const unsigned ranks = size();
    std::vector<float> all(ranks * n);
    all_gather(data, n * sizeof(float), all.data());
    for (size_t i = 0; i < n; ++i) {
      float sum = all[i];
      for (unsigned r = 1; r < ranks; ++r) sum += all[r * n + i];
      data[i] = sum;
    }
  }

  void all_gather(const void* in, size_t bytes, void* out) override {
    const std::string all = call("all_gather", pyb::bytes(static_cast<const char*>(in), bytes)).cast<std::string>();
    copy_out(all, bytes * size(), out, "all_gather");
  }

  void broadcast(void* data, size_t bytes, unsigned root) override {
    const std::string got = call("broadcast", pyb::bytes(static_cast<const char*>(data), bytes), root).cast<std::string>();
    copy_out(got, bytes, data, "broadcast");
  }

  void barrier() override { call("barrier"); }
  void abort(const std::string& why) override { call("abort", why); }

 private:
  template <typename... Args>
  pyb::object call(const char* method, Args&&... args) const {
    pyb::gil_scoped_acquire gil;
    const pyb::function f = pyb::get_override(static_cast<const Communicator*>(this), method);
    if (!f) throw Error(ErrorCode::InvalidArgument, fmt::format("the Python Communicator does not define {}()", method));
    return f(std::forward<Args>(args)...);
  }

  static void copy_out(const std::string& got, size_t expected, void* out, const char* method) {
    if (got.size() != expected)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("the Python Communicator's {}() returned {} bytes; {} were expected", method, got.size(), expected));
    std::memcpy(out, got.data(), expected);
  }
};

// failure: (code name, message) of this rank's error, None when it succeeded; a code the library
// does not name is RankFailed.
void agree_over(Communicator& comm, const std::string& stage, const std::optional<std::pair<std::string, std::string>>& failure,
                const std::string& checkpoint) {
  std::optional<Error> error;
  if (failure) error = Error(error_code_named(failure->first).value_or(ErrorCode::RankFailed), failure->second);
  agree(comm, stage, error, checkpoint);
}

}  // namespace

void register_communicator(pyb::module_& m) {
  pyb::class_<Communicator, PythonCommunicator, std::shared_ptr<Communicator>>(
      m, "Communicator", "wl::Communicator for a Python subclass: rank, size, all_gather, broadcast, barrier, abort")
      .def(pyb::init<>());
  m.def("agree", &agree_over, pyb::arg("comm"), pyb::arg("stage"), pyb::arg("failure") = pyb::none(),
        pyb::arg("checkpoint") = std::string(),
        "Collective: raises on every rank when a rank failed (its code; \"rank r of n failed <stage>: ...\"), or "
        "RanksDisagree when a rank's checkpoint description differs from rank 0's (loaders/rank_agreement.hpp).");
}

}  // namespace wl::py
