// Finding the state dict in a checkpoint and naming its tensors.
#include "formats/pytorch/state_dict.hpp"

#include <gtest/gtest.h>

#include "formats/pytorch/pt_test_util.hpp"

namespace wl::test {
namespace {

using namespace pytorch;
using namespace std::string_literals;

const std::string kFile = "ckpt.pt";

std::string tensor(const std::string& key = "0") {
  return tensor_pickle({.storage_type = "FloatStorage", .key = key, .numel = 1, .offset = 0, .size = {}, .stride = {}});
}

// Names found in the pickle `root` (a pickled value, without PROTO/STOP), and the key they sit under.
std::pair<std::string, std::vector<std::string>> names(const std::string& root, const std::string& key = "") {
  const std::string bytes = pk::proto(2) + root + pk::kStop;
  const Pickle pickle = unpickle(bytes, kFile);
  const StateDict sd = find_state_dict(pickle, key, kFile);
  std::vector<std::string> out;
  for (const NamedTensor& t : sd.tensors) out.push_back(t.name);
  return {sd.key, out};
}

std::string sd_error(ErrorCode code, const std::string& root, const std::string& key = "") {
  const std::string bytes = pk::proto(2) + root + pk::kStop;
  return expect_error(code, [&] { find_state_dict(unpickle(bytes, kFile), key, kFile); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

using Names = std::pair<std::string, std::vector<std::string>>;

TEST(PytorchStateDict, TopLevelTensorsInPickleOrder) {
  EXPECT_EQ(names(pk::ordered_dict({{"b", tensor()}, {"a", tensor()}, {"epoch", "K\x03"}})),
            (Names{"", {"b", "a"}}));
  EXPECT_EQ(names(pk::dict({})), (Names{"", {}}));
}

TEST(PytorchStateDict, FindsTheOneDictOfTensorsUnderAKey) {
  for (const std::string key : {"state_dict", "model", "module", "model_state_dict", "anything"}) {
    const std::string root = pk::dict({{"epoch", "K\x05"},
                                       {key, pk::ordered_dict({{"w", tensor()}, {"b", tensor()}})},
                                       {"optimizer", pk::dict({{"state", pk::dict({})}, {"lr", "K\x01"}})}});
    EXPECT_EQ(names(root), (Names{key, {"w", "b"}}));
  }
}

TEST(PytorchStateDict, FlattensNestedDictsWithDots) {
  const std::string sd = pk::dict({{"encoder", pk::dict({{"w", tensor()}, {"inner", pk::dict({{"b", tensor()}})}})},
                                   {"head.w", tensor()}});
  EXPECT_EQ(names(pk::dict({{"model", sd}})), (Names{"model", {"encoder.w", "encoder.inner.b", "head.w"}}));
  EXPECT_EQ(names(pk::dict({{"x", tensor()}, {"sub", pk::dict({{"y", tensor()}})}})), (Names{"", {"x", "sub.y"}}));
}

TEST(PytorchStateDict, SkipsWhatIsNotATensor) {
  // Non-string keys, numbers, lists: skipped inside a chosen state dict.
  const std::string sd = "}(K\x01" + tensor() + pk::str("w") + tensor() + pk::str("n") + "K\x02" + pk::str("l") + "]u";
  EXPECT_EQ(names(pk::dict({{"model", sd}}), "model"), (Names{"model", {"w"}}));
}

TEST(PytorchStateDict, SharedTensorsKeepBothNames) {
  // Tied weights: one tensor object under two names (the second through the memo).
  const std::string root = pk::dict({}) + "(" + pk::str("embed") + tensor() + "q\x07" + pk::str("lm_head") + "h\x07" + "u";
  EXPECT_EQ(names(root), (Names{"", {"embed", "lm_head"}}));
}

TEST(PytorchStateDict, PicksTheChosenKey) {
  const std::string root = pk::dict({{"model", pk::dict({{"w", tensor()}})}, {"ema", pk::dict({{"v", tensor()}})}});
  EXPECT_EQ(names(root, "ema"), (Names{"ema", {"v"}}));
  EXPECT_EQ(names(root, "model"), (Names{"model", {"w"}}));
}

TEST(PytorchStateDict, AmbiguityListsTheCandidates) {
  const std::string root = pk::dict({{"model", pk::dict({{"w", tensor()}})}, {"ema", pk::dict({{"v", tensor()}})},
                                     {"step", "K\x01"}});
  const std::string message = sd_error(ErrorCode::StateDictAmbiguous, root);
  expect_contains(message, "'model', 'ema'");
  expect_contains(message, "key");
}

TEST(PytorchStateDict, NotFoundDescribesTheTopLevel) {
  const std::string root = pk::dict({{"epoch", "K\x01"}, {"optimizer", pk::dict({{"lr", "K\x01"}, {"p", "]"}})}});
  expect_contains(sd_error(ErrorCode::StateDictNotFound, root), "'epoch' (int), 'optimizer' (dict)");
  expect_contains(sd_error(ErrorCode::StateDictNotFound, root, "model"), "no top-level key 'model'");
  expect_contains(sd_error(ErrorCode::StateDictNotFound, root, "epoch"), "is an int");
  expect_contains(sd_error(ErrorCode::StateDictNotFound, root, "optimizer"), "holds no tensors");
  expect_contains(sd_error(ErrorCode::StateDictNotFound, tensor()), "holds a tensor");
  expect_contains(sd_error(ErrorCode::StateDictNotFound, "]"), "holds a list");
}

TEST(PytorchStateDict, RejectsTwoRoutesToOneName) {
  const std::string root = pk::dict({{"a.b", tensor()}, {"a", pk::dict({{"b", tensor()}})}});
  const std::string message = sd_error(ErrorCode::DuplicateTensorName, root);
  expect_contains(message, "'a.b'");
}

TEST(PytorchStateDict, BoundsNestingAndSharing) {
  std::string deep = tensor();
  for (int i = 0; i < kMaxDictNesting + 1; ++i) deep = pk::dict({{"d", deep}});
  expect_contains(sd_error(ErrorCode::PickleLimitExceeded, pk::dict({{"w", tensor()}, {"deep", deep}})), "nested");
  // A dict holding itself: not a state dict, and not an endless walk.
  const std::string self = "}q\x01" + pk::str("me") + "h\x01" + "s";
  sd_error(ErrorCode::StateDictNotFound, self);
  sd_error(ErrorCode::PickleLimitExceeded, pk::dict({{"w", tensor()}}) + "q\x02" + pk::str("me") + "h\x02" + "s");
  // Each level holds the one below twice: 2^40 names from a few hundred bytes. Levels are
  // memoised and popped; the last is fetched back.
  std::string shared = pk::dict({{"w", tensor()}}) + "q\x00" "0"s;
  for (int i = 1; i <= 40; ++i)
    shared += "}(" + pk::str("a") + "h" + static_cast<char>(i - 1) + pk::str("b") + "h" + static_cast<char>(i - 1) +
              "uq" + static_cast<char>(i) + "0";
  shared += "h" + std::string(1, static_cast<char>(40));
  expect_contains(sd_error(ErrorCode::PickleLimitExceeded, pk::dict({{"x", tensor()}, {"s", shared}})), "shared");
}

}  // namespace
}  // namespace wl::test
