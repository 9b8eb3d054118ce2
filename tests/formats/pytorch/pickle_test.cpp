// The restricted unpickler: values, the allow-list, the bounds, and malformed pickles.
#include "formats/pytorch/pickle.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "formats/pytorch/pt_test_util.hpp"

namespace wl::test {
namespace {

using namespace pytorch;
using namespace std::string_literals;

const std::string kFile = "ckpt.pt";

std::string pickle_error(ErrorCode code, const std::string& bytes, const PickleLimits& limits = {}) {
  return expect_error(code, [&] { unpickle(bytes, kFile, limits); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

const Object& item(const Pickle& p, const Object& container, size_t i) { return p.at(container.items.at(i)); }

TEST(PytorchPickle, ReadsPlainValues) {
  using namespace pk;
  // (None, True, False, -3, 65535, -2**40, 2**70, 1.5, "héllo", b"ab", [1, 1], {'k': 2}, {3}, frozenset())
  std::string long_neg = "\x8a\x06";
  put_le(long_neg, static_cast<uint64_t>(-(int64_t{1} << 40)), 6);
  const std::string bytes = proto(2) + kMark + "N" + "\x88" + "\x89" + "J\xfd\xff\xff\xff" + "M\xff\xff" + long_neg +
                            "\x8a\x09" + std::string(8, '\0') + "\x40" + "G\x3f\xf8" + std::string(6, '\0') +
                            str("h\xc3\xa9llo") + "C\x02" + "ab" + "]K\x01q\x00" "a" "h\x00" "a"s +
                            kEmptyDict + str("k") + "K\x02s" + "\x8f(K\x03\x90" + "(\x91" + kTuple + kStop;
  const Pickle p = unpickle(bytes, kFile);
  const Object& t = p.at(p.root);
  ASSERT_EQ(t.kind, Kind::Tuple);
  ASSERT_EQ(t.items.size(), 14u);
  EXPECT_EQ(item(p, t, 0).kind, Kind::None);
  EXPECT_EQ(item(p, t, 1).kind, Kind::Bool);
  EXPECT_EQ(item(p, t, 1).integer, 1);
  EXPECT_EQ(item(p, t, 2).integer, 0);
  EXPECT_EQ(item(p, t, 3).integer, -3);
  EXPECT_EQ(item(p, t, 4).integer, 65535);
  EXPECT_EQ(item(p, t, 5).integer, -(int64_t{1} << 40));
  EXPECT_EQ(item(p, t, 6).kind, Kind::BigInt);
  EXPECT_EQ(item(p, t, 7).real, 1.5);
  EXPECT_EQ(item(p, t, 8).text, "h\xc3\xa9llo");
  EXPECT_EQ(item(p, t, 9).kind, Kind::Bytes);
  EXPECT_EQ(item(p, t, 9).text, "ab");
  // The list holds the memoised 1 twice.
  const Object& list = item(p, t, 10);
  ASSERT_EQ(list.kind, Kind::List);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(item(p, list, 0).integer, 1);
  const Object& dict = item(p, t, 11);
  ASSERT_EQ(dict.kind, Kind::Dict);
  EXPECT_EQ(item(p, dict, 0).text, "k");
  EXPECT_EQ(item(p, dict, 1).integer, 2);
  EXPECT_EQ(item(p, t, 12).kind, Kind::Set);
  EXPECT_EQ(item(p, t, 12).items.size(), 1u);
  EXPECT_EQ(item(p, t, 13).kind, Kind::Set);
}

TEST(PytorchPickle, ReadsProtocol4Framing) {
  // PROTO 4, FRAME, SHORT_BINUNICODE, MEMOIZE, BINGET, STACK_GLOBAL, EMPTY_TUPLE + REDUCE.
  std::string body = "\x8c\x0b" "collections" "\x94" "\x8c\x0b" "OrderedDict" "\x94" "\x93" "\x94" ")R" "\x94"
                     "h\x02" ")R" "\x86" ".";
  std::string bytes = pk::proto(4) + "\x95";
  put_le(bytes, body.size(), 8);
  const Pickle p = unpickle(bytes + body, kFile);
  const Object& pair = p.at(p.root);
  ASSERT_EQ(pair.items.size(), 2u);
  EXPECT_EQ(item(p, pair, 0).kind, Kind::Dict);
  EXPECT_EQ(item(p, pair, 1).kind, Kind::Dict);
  EXPECT_NE(pair.items[0], pair.items[1]);  // two calls, two dicts
}

TEST(PytorchPickle, RebuildsTensorsAndStorages) {
  TensorSpec spec{.storage_type = "HalfStorage", .key = "7", .numel = 24, .offset = 4, .size = {2, 3}, .stride = {1, 2}};
  const std::string param = pk::global("torch._utils", "_rebuild_parameter") + pk::kMark + tensor_pickle(spec) +
                            "\x88" + pk::ordered_dict({}) + pk::kTuple + pk::kReduce;
  // PyTorch 2 pickles a parameter carrying Python attributes with _rebuild_parameter_with_state.
  const std::string with_state = pk::global("torch._utils", "_rebuild_parameter_with_state") + pk::kMark +
                                 tensor_pickle(spec) + "\x89" + pk::ordered_dict({}) + pk::dict({{"tag", "K\x01"}}) +
                                 pk::kTuple + pk::kReduce;
  // The result views into the pickle's bytes (storage keys), so they must outlive it.
  const std::string bytes =
      pk::proto(2) + pk::dict({{"a", tensor_pickle(spec)}, {"p", param}, {"s", with_state}}) + pk::kStop;
  const Pickle p = unpickle(bytes, kFile);
  const Object& root = p.at(p.root);
  ASSERT_EQ(item(p, root, 1).kind, Kind::Tensor);
  ASSERT_EQ(item(p, root, 3).kind, Kind::Tensor);
  ASSERT_EQ(item(p, root, 5).kind, Kind::Tensor);
  ASSERT_EQ(p.tensors.size(), 3u);
  ASSERT_EQ(p.storages.size(), 1u);  // one key, one storage
  EXPECT_EQ(p.storages[0].dtype, DType::F16);
  EXPECT_EQ(p.storages[0].key, "7");
  EXPECT_EQ(p.storages[0].numel, 24u);
  const TensorDesc& t = p.tensors[static_cast<size_t>(item(p, root, 3).integer)];
  EXPECT_EQ(t.offset, 4);
  EXPECT_EQ(t.size, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.stride, (std::vector<int64_t>{1, 2}));
}

TEST(PytorchPickle, RefusesGlobalsOutsideTheAllowList) {
  // GLOBAL, then a call: the error comes when the global is named, before anything could run.
  const std::string call = pk::str("touch /tmp/x") + "\x85" + pk::kReduce + pk::kStop;
  for (const auto& [module, name] : std::vector<std::pair<std::string, std::string>>{
           {"os", "system"}, {"posix", "system"}, {"builtins", "eval"}, {"__builtin__", "exec"},
           {"subprocess", "Popen"}, {"torch", "load"}, {"collections", "defaultdict"}, {"torch._utils", "_rebuild_qtensor"}}) {
    const std::string message = pickle_error(ErrorCode::PickleGlobalNotAllowed, pk::proto(2) + pk::global(module, name) + call);
    expect_contains(message, module + "." + name);
    expect_contains(message, "not executed");
  }
  // STACK_GLOBAL (protocol 4) the same.
  const std::string stacked = pk::proto(4) + "\x8c\x08" "builtins" "\x8c\x04" "eval" "\x93" + call;
  expect_contains(pickle_error(ErrorCode::PickleGlobalNotAllowed, stacked), "builtins.eval");
  expect_contains(pickle_error(ErrorCode::UnsupportedDType, pk::proto(2) + pk::global("torch", "ComplexFloatStorage") + "."),
                  "ComplexFloatStorage");
}

TEST(PytorchPickle, AllowsTorchDtypes) {
  const Pickle p = unpickle(pk::proto(2) + pk::global("torch", "bfloat16") + pk::kStop, kFile);
  EXPECT_EQ(p.at(p.root).kind, Kind::Global);
  EXPECT_EQ(p.at(p.root).dtype, DType::BF16);
}

TEST(PytorchPickle, AllowsSetsSpelledAsGlobals) {
  // Protocols 2 and 3: set([1, 2]) and frozenset() are calls of the type.
  const std::string bytes = pk::proto(2) + pk::global("__builtin__", "set") + "](K\x01K\x02" "e\x85R" +
                            pk::global("builtins", "frozenset") + ")R\x86.";
  const Pickle p = unpickle(bytes, kFile);
  const Object& pair = p.at(p.root);
  ASSERT_EQ(item(p, pair, 0).kind, Kind::Set);
  EXPECT_EQ(item(p, pair, 0).items.size(), 2u);
  EXPECT_EQ(item(p, pair, 1).kind, Kind::Set);
  EXPECT_TRUE(item(p, pair, 1).items.empty());
  expect_contains(pickle_error(ErrorCode::PickleInvalid, pk::proto(2) + pk::global("builtins", "set") + "K\x01\x85R."),
                  "set is rebuilt from");
}

TEST(PytorchPickle, EnforcesItsBounds) {
  const std::string three = pk::proto(2) + "K\x01q\x00K\x02q\x01K\x03q\x02\x87."s;
  EXPECT_NO_THROW(unpickle(three, kFile, {.max_memo = 3}));
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, three, {.max_memo = 2}), "memo");
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, three, {.max_stack = 2}), "stack");
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, three, {.max_values = 3}), "values");
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, three, {.max_bytes = 10}), "bytes");
  const std::string nested = pk::proto(2) + "(((K\x01ttt.";
  EXPECT_NO_THROW(unpickle(nested, kFile, {.max_marks = 3}));
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, nested, {.max_marks = 2}), "MARK");
  // A list that APPENDS the same value many times counts every reference.
  std::string appends = pk::proto(2) + "]K\x07q\x00" "0("s;
  for (int i = 0; i < 100; ++i) appends += "h\x00"s;
  expect_contains(pickle_error(ErrorCode::PickleLimitExceeded, appends + "e.", {.max_values = 50}), "values");
}

TEST(PytorchPickle, ChecksLengthsBeforeAllocating) {
  // BINUNICODE8 / BINBYTES8 / LONG4 claiming far more bytes than the pickle holds.
  for (const std::string op : {"\x8d", "\x8e"}) {
    std::string bytes = pk::proto(4) + op;
    put_le(bytes, uint64_t{1} << 62, 8);
    expect_contains(pickle_error(ErrorCode::PickleInvalid, bytes + "abc."), "only 4 remain");
  }
  expect_contains(pickle_error(ErrorCode::PickleInvalid, pk::proto(2) + "X\xff\xff\xff\x7f" "abc."), "remain");
  expect_contains(pickle_error(ErrorCode::PickleInvalid, pk::proto(2) + "\x8b\xff\xff\xff\x7f."), "remain");
  expect_contains(pickle_error(ErrorCode::PickleInvalid, pk::proto(2) + "\x8b\xff\xff\xff\xff."), "negative");
  std::string frame = pk::proto(4) + "\x95";
  put_le(frame, 1000, 8);
  expect_contains(pickle_error(ErrorCode::PickleInvalid, frame + "N."), "frame");
}

TEST(PytorchPickle, RejectsMalformedPickles) {
  const auto bad = [](const std::string& body, const std::string& part) {
    expect_contains(pickle_error(ErrorCode::PickleInvalid, body), part);
  };
  bad("", "PROTO");
  bad("(lp0\n.", "PROTO");                          // protocol 0
  bad(pk::proto(1) + "N.", "protocol 1");
  bad(pk::proto(6) + "N.", "protocol 6");
  bad(pk::proto(2) + "N", "without a STOP");
  bad(pk::proto(2) + ".", "0 value(s)");
  bad(pk::proto(2) + "NN.", "2 value(s)");
  bad(pk::proto(2) + "(N.", "open MARK");
  bad(pk::proto(2) + "0.", "empty stack");
  bad(pk::proto(2) + "(0N.", "empty stack");         // POP may not cross a MARK
  bad(pk::proto(2) + "1.", "no MARK");
  bad(pk::proto(2) + "h\x05.", "memo entry 5");
  bad(pk::proto(2) + "K\x01" "K\x02" "a.", "not a list");
  bad(pk::proto(2) + "}(K\x01u.", "odd count");
  bad(pk::proto(2) + "(K\x01" "d.", "odd count");
  bad(pk::proto(2) + "X\x02\x00\x00\x00\xc3\x28."s, "not UTF-8");
  bad(pk::proto(2) + "cos\nsystem", "newline");
  bad(pk::proto(2) + "I1\n.", "INT");                 // text opcodes of protocol 0
  bad(pk::proto(2) + "i__main__\nX\n.", "INST");
  bad(pk::proto(2) + "\x82\x01.", "EXT1");
  bad(pk::proto(2) + "\xff.", "0xff");
  bad(pk::proto(2) + "K\x01)R.", "not callable");
  bad(pk::proto(2) + pk::global("torch", "FloatStorage") + ")R.", "storage type");
  bad(pk::proto(2) + pk::global("collections", "OrderedDict") + "K\x01\x85R.", "OrderedDict");
  bad(pk::proto(2) + pk::global("torch._utils", "_rebuild_tensor_v2") + ")R.", "_rebuild_tensor_v2 takes");
  bad(pk::proto(2) + pk::global("torch._utils", "_rebuild_parameter") + "K\x01\x88N\x87R.", "_rebuild_parameter takes");
  bad(pk::proto(2) + "K\x01" "K\x02" "b.", "BUILD on an int");
  bad(pk::proto(2) + pk::global("torch._utils", "_rebuild_tensor_v2") + ")\x81.", "NEWOBJ");
  bad(pk::proto(2) + pk::str("storage") + "\x85Q.", "persistent id");
  TensorSpec spec{.numel = 4, .size = {2, 2}, .stride = {2}};
  bad(pk::proto(2) + tensor_pickle(spec) + ".", "2 sizes but 1 strides");
  spec.stride = {2, 1};
  spec.numel = -1;
  bad(pk::proto(2) + tensor_pickle(spec) + ".", "persistent id");
}

TEST(PytorchPickle, RejectsAStorageKeyReusedWithAnotherType) {
  const TensorSpec f{.storage_type = "FloatStorage", .numel = 4, .size = {4}, .stride = {1}};
  TensorSpec h = f;
  h.storage_type = "HalfStorage";
  const std::string bytes = pk::proto(2) + pk::dict({{"a", tensor_pickle(f)}, {"b", tensor_pickle(h)}}) + ".";
  expect_contains(pickle_error(ErrorCode::StorageInvalid, bytes), "storage '0'");
  TensorSpec longer = f;
  longer.numel = 5;
  expect_error(ErrorCode::StorageInvalid, [&] {
    unpickle(pk::proto(2) + pk::dict({{"a", tensor_pickle(f)}, {"b", tensor_pickle(longer)}}) + ".", kFile);
  });
}

TEST(PytorchPickle, NamesTheFileAndPosition) {
  const std::string message = pickle_error(ErrorCode::PickleInvalid, pk::proto(2) + "NN0\xff.");
  expect_contains(message, kFile);
  expect_contains(message, "byte 5");
}

}  // namespace
}  // namespace wl::test
