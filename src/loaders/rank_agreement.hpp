// Before any rank computes, every rank learns whether all of them opened and loaded the same
// checkpoint: one collective per stage gathers each rank's status (and what it saw), so a rank
// that failed makes all of them throw the same error, naming it, instead of leaving the others
// waiting in the forward pass or generating from a partial model.
#pragma once

#include <optional>
#include <string>

#include "weightloader/communicator.hpp"
#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {

// What a rank must agree on: format, configuration, and per tensor its name, stored type, shape,
// file (base name), offset and size; the description ends with a hash of all of it.
std::string describe_checkpoint(const WeightSource& source);

// Collective. Throws on every rank when any rank has a `failure` (its code, "rank r of n: ..." for
// each failed rank), or, when none failed, RanksDisagree when a rank's `checkpoint` differs from
// rank 0's. `stage` says what the ranks were doing ("opening the checkpoint", "loading").
void agree(Communicator& comm, const std::string& stage, const std::optional<Error>& failure, const std::string& checkpoint = {});

}  // namespace wl
