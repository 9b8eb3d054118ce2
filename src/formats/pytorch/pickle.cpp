#include "formats/pytorch/pickle.hpp"

#include <bit>
#include <unordered_map>

#include <fmt/format.h>

#include "core/utf8.hpp"
#include "weightloader/error.hpp"

namespace wl::pytorch {
namespace {

// Opcode bytes (CPython's Lib/pickle.py), protocols 2 to 5.
enum Op : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', BININT = 'J', BININT1 = 'K', BININT2 = 'M',
  NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd',
  EMPTY_DICT = '}', APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j', LIST = 'l', EMPTY_LIST = ']', BINPUT = 'q',
  LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G', BINBYTES = 'B',
  SHORT_BINBYTES = 'C', PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88,
  NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f, ADDITEMS = 0x90, FROZENSET = 0x91, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
  BYTEARRAY8 = 0x96,
};

// Names for messages, including the opcodes this reader refuses.
std::string_view opcode_name(uint8_t op) {
  switch (op) {
    case MARK: return "MARK"; case STOP: return "STOP"; case POP: return "POP"; case POP_MARK: return "POP_MARK";
    case DUP: return "DUP"; case BININT: return "BININT"; case BININT1: return "BININT1"; case BININT2: return "BININT2";
    case NONE: return "NONE"; case BINPERSID: return "BINPERSID"; case REDUCE: return "REDUCE";
    case BINUNICODE: return "BINUNICODE"; case APPEND: return "APPEND"; case BUILD: return "BUILD";
    case GLOBAL: return "GLOBAL"; case DICT: return "DICT"; case EMPTY_DICT: return "EMPTY_DICT";
    case APPENDS: return "APPENDS"; case BINGET: return "BINGET"; case LONG_BINGET: return "LONG_BINGET";
    case LIST: return "LIST"; case EMPTY_LIST: return "EMPTY_LIST"; case BINPUT: return "BINPUT";
    case LONG_BINPUT: return "LONG_BINPUT"; case SETITEM: return "SETITEM"; case TUPLE: return "TUPLE";
    case EMPTY_TUPLE: return "EMPTY_TUPLE"; case SETITEMS: return "SETITEMS"; case BINFLOAT: return "BINFLOAT";
    case BINBYTES: return "BINBYTES"; case SHORT_BINBYTES: return "SHORT_BINBYTES"; case PROTO: return "PROTO";
    case NEWOBJ: return "NEWOBJ"; case TUPLE1: return "TUPLE1"; case TUPLE2: return "TUPLE2"; case TUPLE3: return "TUPLE3";
    case NEWTRUE: return "NEWTRUE"; case NEWFALSE: return "NEWFALSE"; case LONG1: return "LONG1"; case LONG4: return "LONG4";
    case SHORT_BINUNICODE: return "SHORT_BINUNICODE"; case BINUNICODE8: return "BINUNICODE8";
    case BINBYTES8: return "BINBYTES8"; case EMPTY_SET: return "EMPTY_SET"; case ADDITEMS: return "ADDITEMS";
    case FROZENSET: return "FROZENSET"; case STACK_GLOBAL: return "STACK_GLOBAL"; case MEMOIZE: return "MEMOIZE";
    case FRAME: return "FRAME"; case BYTEARRAY8: return "BYTEARRAY8";
    // Refused: text opcodes of protocols 0 and 1, extension registry, out-of-band buffers, NEWOBJ_EX.
    case 'F': return "FLOAT"; case 'I': return "INT"; case 'L': return "LONG"; case 'P': return "PERSID";
    case 'S': return "STRING"; case 'T': return "BINSTRING"; case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE"; case 'g': return "GET"; case 'i': return "INST"; case 'o': return "OBJ";
    case 'p': return "PUT"; case 0x82: return "EXT1"; case 0x83: return "EXT2"; case 0x84: return "EXT4";
    case 0x92: return "NEWOBJ_EX"; case 0x97: return "NEXT_BUFFER"; case 0x98: return "READONLY_BUFFER";
    default: return "unknown";
  }
}

struct AllowedGlobal {
  std::string_view module, name;
  Global global;
  DType dtype = DType::F32;
};

constexpr AllowedGlobal kAllowed[] = {
    {"collections", "OrderedDict", Global::OrderedDict},
    {"torch._utils", "_rebuild_tensor_v2", Global::RebuildTensorV2},
    {"torch._utils", "_rebuild_parameter", Global::RebuildParameter},
    {"torch._utils", "_rebuild_parameter_with_state", Global::RebuildParameterWithState},
    // Protocols 2 and 3 have no set opcodes: sets are rebuilt by calling the type on a list.
    {"builtins", "set", Global::Set},
    {"builtins", "frozenset", Global::Set},
    {"__builtin__", "set", Global::Set},
    {"__builtin__", "frozenset", Global::Set},
    {"torch", "FloatStorage", Global::StorageType, DType::F32},
    {"torch", "DoubleStorage", Global::StorageType, DType::F64},
    {"torch", "HalfStorage", Global::StorageType, DType::F16},
    {"torch", "BFloat16Storage", Global::StorageType, DType::BF16},
    {"torch", "LongStorage", Global::StorageType, DType::I64},
    {"torch", "IntStorage", Global::StorageType, DType::I32},
    {"torch", "ShortStorage", Global::StorageType, DType::I16},
    {"torch", "CharStorage", Global::StorageType, DType::I8},
    {"torch", "ByteStorage", Global::StorageType, DType::U8},
    {"torch", "BoolStorage", Global::StorageType, DType::BOOL},
    {"torch", "float32", Global::TorchDType, DType::F32},
    {"torch", "float", Global::TorchDType, DType::F32},
    {"torch", "float64", Global::TorchDType, DType::F64},
    {"torch", "double", Global::TorchDType, DType::F64},
    {"torch", "float16", Global::TorchDType, DType::F16},
    {"torch", "half", Global::TorchDType, DType::F16},
    {"torch", "bfloat16", Global::TorchDType, DType::BF16},
    {"torch", "int64", Global::TorchDType, DType::I64},
    {"torch", "long", Global::TorchDType, DType::I64},
    {"torch", "int32", Global::TorchDType, DType::I32},
    {"torch", "int", Global::TorchDType, DType::I32},
    {"torch", "int16", Global::TorchDType, DType::I16},
    {"torch", "short", Global::TorchDType, DType::I16},
    {"torch", "int8", Global::TorchDType, DType::I8},
    {"torch", "uint8", Global::TorchDType, DType::U8},
    {"torch", "bool", Global::TorchDType, DType::BOOL},
};

class Unpickler {
 public:
  Unpickler(std::string_view in, const std::string& file, const PickleLimits& limits)
      : in_(in), file_(file), limits_(limits) {}

  Pickle run() {
    if (in_.size() > limits_.max_bytes)
      throw Error(ErrorCode::PickleLimitExceeded,
                  fmt::format("data.pkl is {} bytes; the limit is {}", in_.size(), limits_.max_bytes), file_);
    if (in_.size() < 2 || static_cast<uint8_t>(in_[0]) != PROTO)
      throw Error(ErrorCode::PickleInvalid,
                  "data.pkl does not start with a PROTO opcode: not a pickle of protocol 2 or later", file_);
    while (true) {
      op_at_ = pos_;
      if (pos_ >= in_.size())
        throw Error(ErrorCode::PickleInvalid, fmt::format("data.pkl ends at byte {} without a STOP opcode", pos_), file_);
      op_ = static_cast<uint8_t>(in_[pos_++]);
      if (op_ == STOP) break;
      step();
    }
    if (!marks_.empty() || stack_.size() != 1)
      invalid(fmt::format("STOP leaves {} value(s) and {} open MARK(s) on the stack; expected exactly one value",
                          stack_.size(), marks_.size()));
    out_.root = stack_.back();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& message) const {
    throw Error(code, fmt::format("data.pkl byte {} (opcode {}): {}", op_at_, opcode_name(op_), message), file_);
  }
  [[noreturn]] void invalid(const std::string& message) const { fail(ErrorCode::PickleInvalid, message); }
  [[noreturn]] void limit(const std::string& message) const { fail(ErrorCode::PickleLimitExceeded, message); }

  // --- input ---
  std::string_view take(uint64_t n) {
    if (n > in_.size() - pos_)
      invalid(fmt::format("needs {} more byte(s) but only {} remain", n, in_.size() - pos_));
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint_le(size_t n) {
    const std::string_view s = take(n);
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(s[i]);
    return v;
  }
  std::string_view line() {
    const size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) invalid("a GLOBAL name is not terminated by a newline");
    const std::string_view s = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  // --- values ---
  void count_values(uint64_t n) {
    values_ += n;
    if (values_ > limits_.max_values)
      limit(fmt::format("the pickle holds more than {} values (objects and container entries)", limits_.max_values));
  }
  ObjId make(Object object) {
    count_values(1 + object.items.size());
    out_.objects.push_back(std::move(object));
    return static_cast<ObjId>(out_.objects.size() - 1);
  }
  ObjId make(Kind kind, int64_t integer = 0) {
    Object o;
    o.kind = kind;
    o.integer = integer;
    return make(std::move(o));
  }
  Object& obj(ObjId id) { return out_.objects[id]; }

  // --- stack ---
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(ObjId id) {
    if (stack_.size() >= limits_.max_stack) limit(fmt::format("the stack grows past {} values", limits_.max_stack));
    stack_.push_back(id);
  }
  ObjId pop() {
    if (stack_.size() <= floor()) invalid("pops from an empty stack");
    const ObjId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  ObjId top() const {
    if (stack_.size() <= floor()) invalid("needs a value but the stack is empty");
    return stack_.back();
  }
  std::vector<ObjId> pop_mark() {
    if (marks_.empty()) invalid("no MARK to pop to");
    std::vector<ObjId> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  ObjId pop_kind(Kind kind, const char* role) {
    const ObjId id = pop();
    if (obj(id).kind != kind) invalid(fmt::format("{} must be {}, not {}", role, kind_with_article(kind), kind_with_article(obj(id).kind)));
    return id;
  }
  // Appends `items` to the container on top of the stack, which must be of `kind`.
  void extend_top(Kind kind, const std::vector<ObjId>& items) {
    const ObjId target = top();
    if (obj(target).kind != kind)
      invalid(fmt::format("adds items to {}, which is not {}", kind_with_article(obj(target).kind), kind_with_article(kind)));
    if (kind == Kind::Dict && items.size() % 2 != 0) invalid("a dict needs key/value pairs but got an odd count");
    count_values(items.size());
    obj(target).items.insert(obj(target).items.end(), items.begin(), items.end());
  }
  ObjId container(Kind kind, std::vector<ObjId> items) {
    if (kind == Kind::Dict && items.size() % 2 != 0) invalid("a dict needs key/value pairs but got an odd count");
    Object o;
    o.kind = kind;
    o.items = std::move(items);
    return make(std::move(o));
  }

  // --- memo ---
  void put(uint64_t index) {
    const ObjId value = top();
    const auto [it, fresh] = memo_.insert_or_assign(static_cast<uint32_t>(index), value);
    if (fresh && memo_.size() > limits_.max_memo) limit(fmt::format("the memo grows past {} entries", limits_.max_memo));
  }
  void get(uint64_t index) {
    const auto it = memo_.find(static_cast<uint32_t>(index));
    if (it == memo_.end()) invalid(fmt::format("memo entry {} was never stored", index));
    push(it->second);
  }

  // --- numbers and strings ---
  void push_long(std::string_view bytes) {
    if (bytes.size() > 8) {
      push(make(Kind::BigInt));
      return;
    }
    uint64_t v = 0;
    for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
    if (!bytes.empty() && bytes.size() < 8 && (static_cast<uint8_t>(bytes.back()) & 0x80))
      v |= ~uint64_t{0} << (8 * bytes.size());  // sign-extend
    push(make(Kind::Int, static_cast<int64_t>(v)));
  }
  void push_text(Kind kind, uint64_t length) {
    const std::string_view s = take(length);
    if (kind == Kind::String)
      if (const auto bad = safetensors::find_invalid_utf8(s))
        invalid(fmt::format("string of {} bytes is not UTF-8 (byte {})", s.size(), *bad));
    Object o;
    o.kind = kind;
    o.text = s;
    push(make(std::move(o)));
  }

  // --- globals and calls ---
  void push_global(std::string_view module, std::string_view name) {
    for (const AllowedGlobal& g : kAllowed)
      if (g.module == module && g.name == name) {
        Object o;
        o.kind = Kind::Global;
        o.global = g.global;
        o.dtype = g.dtype;
        push(make(std::move(o)));
        return;
      }
    if (module == "torch" && name.ends_with("Storage"))
      fail(ErrorCode::UnsupportedDType,
           fmt::format("storage type torch.{} is not supported (supported: float, double, half, bfloat16, long, int, "
                       "short, char, byte and bool storages)",
                       name));
    fail(ErrorCode::PickleGlobalNotAllowed,
         fmt::format("the pickle names the global {}.{}, which a weights-only reader does not allow; it was not "
                     "executed (allowed: collections.OrderedDict, torch._utils._rebuild_tensor_v2, "
                     "torch._utils._rebuild_parameter[_with_state], torch.<T>Storage, torch dtypes, set and "
                     "frozenset)",
                     module, name));
  }

  std::string describe_args(const std::vector<ObjId>& args) const {
    std::string out = "(";
    for (size_t i = 0; i < args.size(); ++i)
      out += fmt::format("{}{}", i ? ", " : "", kind_name(out_.objects[args[i]].kind));
    return out + ")";
  }

  std::vector<int64_t> int_tuple(ObjId id, const char* role) {
    const Object& t = obj(id);
    if (t.kind != Kind::Tuple) invalid(fmt::format("the tensor's {} must be a tuple, not {}", role, kind_with_article(t.kind)));
    std::vector<int64_t> out;
    for (ObjId item : t.items) {
      if (obj(item).kind != Kind::Int)
        invalid(fmt::format("the tensor's {} holds {}, not an int", role, kind_with_article(obj(item).kind)));
      out.push_back(obj(item).integer);
    }
    return out;
  }

  ObjId rebuild_tensor(const std::vector<ObjId>& a) {
    if ((a.size() != 6 && a.size() != 7) || obj(a[0]).kind != Kind::Storage || obj(a[1]).kind != Kind::Int ||
        obj(a[4]).kind != Kind::Bool)
      invalid(fmt::format("_rebuild_tensor_v2 takes (storage, offset, size, stride, requires_grad, hooks[, metadata]), "
                          "got {}",
                          describe_args(a)));
    TensorDesc t{static_cast<uint32_t>(obj(a[0]).integer), obj(a[1]).integer, int_tuple(a[2], "size"),
                 int_tuple(a[3], "stride")};
    if (t.size.size() != t.stride.size())
      invalid(fmt::format("the tensor has {} sizes but {} strides", t.size.size(), t.stride.size()));
    count_values(t.size.size() * 2);
    out_.tensors.push_back(std::move(t));
    return make(Kind::Tensor, static_cast<int64_t>(out_.tensors.size() - 1));
  }

  // Arguments are copied: creating objects may move the one they came from.
  ObjId call(ObjId callable_id, std::vector<ObjId> args) {
    const Object& callable = obj(callable_id);
    if (callable.kind != Kind::Global) invalid(fmt::format("calls {}, which is not callable", kind_with_article(callable.kind)));
    const Global global = callable.global;
    switch (global) {
      case Global::OrderedDict:
        if (!args.empty()) invalid(fmt::format("OrderedDict is rebuilt from (), got {}", describe_args(args)));
        return make(Kind::Dict);
      case Global::RebuildTensorV2:
        return rebuild_tensor(args);
      case Global::Set: {
        if (args.empty()) return make(Kind::Set);
        const Kind from = args.size() == 1 ? obj(args[0]).kind : Kind::None;
        if (from != Kind::List && from != Kind::Tuple && from != Kind::Set)
          invalid(fmt::format("set is rebuilt from () or (list,), got {}", describe_args(args)));
        return container(Kind::Set, obj(args[0]).items);
      }
      case Global::RebuildParameter:
      case Global::RebuildParameterWithState: {
        const size_t n = global == Global::RebuildParameter ? 3 : 4;
        if (args.size() != n || obj(args[0]).kind != Kind::Tensor)
          invalid(fmt::format("_rebuild_parameter{} takes (tensor, requires_grad, hooks{}), got {}",
                              n == 4 ? "_with_state" : "", n == 4 ? ", state" : "", describe_args(args)));
        return args[0];  // a parameter is its tensor
      }
      case Global::StorageType:
      case Global::TorchDType:
        break;
    }
    invalid("calls a storage type or dtype, which a checkpoint never does");
  }

  // ('storage', torch.<T>Storage, key, location, numel): one storage per key.
  ObjId persistent_load(ObjId pid) {
    const Object& t = obj(pid);
    const auto is = [&](size_t i, Kind k) { return obj(t.items[i]).kind == k; };
    if (t.kind != Kind::Tuple || t.items.size() != 5 || !is(0, Kind::String) || obj(t.items[0]).text != "storage" ||
        !is(1, Kind::Global) || obj(t.items[1]).global != Global::StorageType || !is(2, Kind::String) ||
        !is(3, Kind::String) || !is(4, Kind::Int) || obj(t.items[4]).integer < 0)
      invalid("a persistent id must be ('storage', torch.<T>Storage, key, location, numel)");
    const StorageDesc s{obj(t.items[1]).dtype, obj(t.items[2]).text, static_cast<uint64_t>(obj(t.items[4]).integer)};
    const auto [it, fresh] = storage_by_key_.emplace(s.key, static_cast<uint32_t>(out_.storages.size()));
    if (fresh) {
      out_.storages.push_back(s);
    } else if (const StorageDesc& first = out_.storages[it->second]; first.dtype != s.dtype || first.numel != s.numel) {
      fail(ErrorCode::StorageInvalid,
           fmt::format("storage '{}' is declared as {} {} elements and again as {} {} elements", s.key, first.numel,
                       dtype_name(first.dtype), s.numel, dtype_name(s.dtype)));
    }
    return make(Kind::Storage, it->second);
  }

  // One opcode: the groups below each handle theirs and return false for the rest.
  void step() {
    if (framing_op() || scalar_op() || container_op() || object_op()) return;
    invalid(fmt::format("opcode 0x{:02x} ({}) is not supported: torch.save writes pickles of protocol 2 to 5 "
                        "without it",
                        op_, opcode_name(op_)));
  }

  // PROTO, FRAME and the stack's MARK / POP / DUP.
  bool framing_op() {
    switch (op_) {
      case PROTO: {
        const uint64_t v = uint_le(1);
        if (v < 2 || v > 5) invalid(fmt::format("protocol {}; only protocols 2 to 5 are supported", v));
        return true;
      }
      case FRAME: {
        const uint64_t n = uint_le(8);
        if (n > in_.size() - pos_) invalid(fmt::format("a frame of {} bytes runs past the end of the pickle", n));
        return true;
      }
      case MARK:
        if (marks_.size() >= limits_.max_marks) limit(fmt::format("more than {} MARKs open at once", limits_.max_marks));
        marks_.push_back(stack_.size());
        return true;
      case POP: pop(); return true;
      case POP_MARK: pop_mark(); return true;
      case DUP: push(top()); return true;
      default: return false;
    }
  }

  // None, bools, ints, floats, strings and bytes.
  bool scalar_op() {
    switch (op_) {
      case NONE: push(make(Kind::None)); return true;
      case NEWTRUE: push(make(Kind::Bool, 1)); return true;
      case NEWFALSE: push(make(Kind::Bool, 0)); return true;
      case BININT: push(make(Kind::Int, static_cast<int32_t>(uint_le(4)))); return true;
      case BININT1: push(make(Kind::Int, static_cast<int64_t>(uint_le(1)))); return true;
      case BININT2: push(make(Kind::Int, static_cast<int64_t>(uint_le(2)))); return true;
      case LONG1: push_long(take(uint_le(1))); return true;
      case LONG4: {
        const auto n = static_cast<int32_t>(uint_le(4));
        if (n < 0) invalid("negative LONG4 length");
        push_long(take(static_cast<uint64_t>(n)));
        return true;
      }
      case BINFLOAT: {
        uint64_t bits = 0;  // big-endian on the wire
        for (char c : take(8)) bits = (bits << 8) | static_cast<uint8_t>(c);
        Object o;
        o.kind = Kind::Float;
        o.real = std::bit_cast<double>(bits);
        push(make(std::move(o)));
        return true;
      }
      case SHORT_BINUNICODE: push_text(Kind::String, uint_le(1)); return true;
      case BINUNICODE: push_text(Kind::String, uint_le(4)); return true;
      case BINUNICODE8: push_text(Kind::String, uint_le(8)); return true;
      case SHORT_BINBYTES: push_text(Kind::Bytes, uint_le(1)); return true;
      case BINBYTES: push_text(Kind::Bytes, uint_le(4)); return true;
      case BINBYTES8:
      case BYTEARRAY8: push_text(Kind::Bytes, uint_le(8)); return true;
      default: return false;
    }
  }

  // Tuples, lists, dicts and sets, built at once or item by item.
  bool container_op() {
    switch (op_) {
      case EMPTY_TUPLE: push(make(Kind::Tuple)); return true;
      case TUPLE: push(container(Kind::Tuple, pop_mark())); return true;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        std::vector<ObjId> items(op_ - TUPLE1 + 1);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(container(Kind::Tuple, std::move(items)));
        return true;
      }
      case EMPTY_LIST: push(make(Kind::List)); return true;
      case LIST: push(container(Kind::List, pop_mark())); return true;
      case APPEND: {
        const ObjId v = pop();
        extend_top(Kind::List, {v});
        return true;
      }
      case APPENDS: extend_top(Kind::List, pop_mark()); return true;
      case EMPTY_DICT: push(make(Kind::Dict)); return true;
      case DICT: push(container(Kind::Dict, pop_mark())); return true;
      case SETITEM: {
        const ObjId v = pop(), k = pop();
        extend_top(Kind::Dict, {k, v});
        return true;
      }
      case SETITEMS: extend_top(Kind::Dict, pop_mark()); return true;
      case EMPTY_SET: push(make(Kind::Set)); return true;
      case ADDITEMS: extend_top(Kind::Set, pop_mark()); return true;
      case FROZENSET: push(container(Kind::Set, pop_mark())); return true;
      default: return false;
    }
  }

  // The memo, globals, persistent ids (storages) and the calls that build tensors.
  bool object_op() {
    switch (op_) {
      case BINPUT: put(uint_le(1)); return true;
      case LONG_BINPUT: put(uint_le(4)); return true;
      case MEMOIZE: put(memo_.size()); return true;
      case BINGET: get(uint_le(1)); return true;
      case LONG_BINGET: get(uint_le(4)); return true;
      case GLOBAL: {
        const std::string_view module = line();
        push_global(module, line());
        return true;
      }
      case STACK_GLOBAL: {
        const ObjId name = pop_kind(Kind::String, "STACK_GLOBAL's name");
        const ObjId module = pop_kind(Kind::String, "STACK_GLOBAL's module");
        push_global(obj(module).text, obj(name).text);
        return true;
      }
      case BINPERSID: push(persistent_load(pop())); return true;
      case REDUCE: {
        const ObjId args = pop_kind(Kind::Tuple, "REDUCE's arguments");
        const ObjId callable = pop();
        push(call(callable, obj(args).items));
        return true;
      }
      case NEWOBJ: {
        const ObjId args = pop_kind(Kind::Tuple, "NEWOBJ's arguments");
        const ObjId cls = pop();
        if (obj(cls).kind != Kind::Global || obj(cls).global != Global::OrderedDict)
          invalid("NEWOBJ may only create an OrderedDict");
        push(call(cls, obj(args).items));
        return true;
      }
      case BUILD: {
        pop();  // the state: attributes of the object, which carry no tensor data
        const Kind kind = obj(top()).kind;
        if (kind != Kind::Dict && kind != Kind::Tensor)
          invalid(fmt::format("BUILD on {}; only dicts and tensors may carry state", kind_with_article(kind)));
        return true;
      }
      default: return false;
    }
  }

  std::string_view in_;
  const std::string& file_;
  const PickleLimits& limits_;
  size_t pos_ = 0, op_at_ = 0;
  uint8_t op_ = 0;
  uint64_t values_ = 0;
  Pickle out_;
  std::vector<ObjId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, ObjId> memo_;
  std::unordered_map<std::string_view, uint32_t> storage_by_key_;
};

}  // namespace

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "int (beyond 64 bits)";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Set: return "set";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

std::string kind_with_article(Kind kind) {
  if (kind == Kind::None) return "None";
  return fmt::format("{} {}", kind == Kind::Int || kind == Kind::BigInt ? "an" : "a", kind_name(kind));
}

Pickle unpickle(std::string_view bytes, const std::string& file, const PickleLimits& limits) {
  return Unpickler(bytes, file, limits).run();
}

}  // namespace wl::pytorch
