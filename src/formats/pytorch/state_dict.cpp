#include "formats/pytorch/state_dict.hpp"

#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl::pytorch {
namespace {

constexpr size_t kMaxListedKeys = 20;

class Finder {
 public:
  Finder(const Pickle& pickle, const std::string& file) : p_(pickle), file_(file) {}

  StateDict find(const std::string& key) {
    const Object& root = p_.at(p_.root);
    if (root.kind != Kind::Dict)
      throw Error(ErrorCode::StateDictNotFound,
                  fmt::format("the checkpoint holds {}, not a dict of tensors", kind_with_article(root.kind)), file_);
    if (!key.empty()) return under_key(root, key);
    for (size_t i = 0; i < root.items.size(); i += 2)
      if (p_.at(root.items[i + 1]).kind == Kind::Tensor) return flattened(p_.root, "");
    if (root.items.empty()) return {};  // an empty state dict

    // No tensor at the top level: the state dict is the one entry that is a dict of tensors.
    std::vector<std::string> candidates;
    ObjId chosen = 0;
    for (size_t i = 0; i < root.items.size(); i += 2) {
      const Object& k = p_.at(root.items[i]);
      if (k.kind == Kind::String && pure_tensor_count(root.items[i + 1], 1) > 0) {
        candidates.emplace_back(k.text);
        chosen = root.items[i + 1];
      }
    }
    if (candidates.size() == 1) return flattened(chosen, candidates.front());
    if (candidates.empty())
      throw Error(ErrorCode::StateDictNotFound,
                  fmt::format("no dict of tensors at the top level or under any top-level key; the top level holds {}",
                              describe_entries(root)),
                  file_);
    throw Error(ErrorCode::StateDictAmbiguous,
                fmt::format("several top-level keys hold a dict of tensors: '{}'; choose one by passing its key "
                            "(read_pytorch_catalogue(path, key))",
                            fmt::join(candidates, "', '")),
                file_);
  }

 private:
  void check_depth(int depth) const {
    if (depth > kMaxDictNesting)
      throw Error(ErrorCode::PickleLimitExceeded, fmt::format("dicts are nested more than {} deep", kMaxDictNesting),
                  file_);
  }

  StateDict under_key(const Object& root, const std::string& key) {
    for (size_t i = 0; i < root.items.size(); i += 2) {
      const Object& k = p_.at(root.items[i]);
      if (k.kind != Kind::String || k.text != key) continue;
      const Object& v = p_.at(root.items[i + 1]);
      if (v.kind != Kind::Dict)
        throw Error(ErrorCode::StateDictNotFound,
                    fmt::format("the value under key '{}' is {}, not a dict of tensors", key, kind_with_article(v.kind)), file_);
      StateDict sd = flattened(root.items[i + 1], key);
      if (sd.tensors.empty() && !v.items.empty())
        throw Error(ErrorCode::StateDictNotFound, fmt::format("the dict under key '{}' holds no tensors", key), file_);
      return sd;
    }
    throw Error(ErrorCode::StateDictNotFound,
                fmt::format("no top-level key '{}'; the top level holds {}", key, describe_entries(root)), file_);
  }

  // Tensors in a dict whose keys are all strings and whose values are all tensors or such dicts;
  // -1 for anything else (including a dict that contains itself). Memoised: dicts may be shared.
  int64_t pure_tensor_count(ObjId id, int depth) {
    check_depth(depth);
    if (p_.at(id).kind != Kind::Dict) return -1;
    const auto [slot, fresh] = counts_.emplace(id, -1);  // -1 while in progress: a cycle is not pure
    if (!fresh) return slot->second;
    const Object& d = p_.at(id);
    int64_t n = 0;
    for (size_t i = 0; i < d.items.size() && n >= 0; i += 2) {
      if (p_.at(d.items[i]).kind != Kind::String) {
        n = -1;
      } else if (p_.at(d.items[i + 1]).kind == Kind::Tensor) {
        ++n;
      } else {
        const int64_t c = pure_tensor_count(d.items[i + 1], depth + 1);
        n = c < 0 ? -1 : n + c;
      }
    }
    counts_[id] = n;
    return n;
  }

  StateDict flattened(ObjId id, const std::string& key) {
    StateDict sd{key, {}};
    std::unordered_set<std::string> names;
    // A tree visits each dict entry once; shared dicts are visited again, and this bounds the work.
    uint64_t budget = 0;
    for (const Object& o : p_.objects) budget += o.items.size();
    flatten(id, "", 1, sd, names, budget);
    return sd;
  }

  // String-keyed tensors and dicts, named by their dotted path; other values are skipped.
  void flatten(ObjId id, const std::string& prefix, int depth, StateDict& out, std::unordered_set<std::string>& names,
               uint64_t& budget) {
    check_depth(depth);
    const Object& d = p_.at(id);
    for (size_t i = 0; i < d.items.size(); i += 2) {
      if (budget < 2)
        throw Error(ErrorCode::PickleLimitExceeded,
                    "the state dict's nested dicts are shared so often that naming its tensors would not end", file_);
      budget -= 2;
      const Object& k = p_.at(d.items[i]);
      const Object& v = p_.at(d.items[i + 1]);
      if (k.kind != Kind::String || (v.kind != Kind::Tensor && v.kind != Kind::Dict)) continue;
      std::string name = prefix.empty() ? std::string(k.text) : fmt::format("{}.{}", prefix, k.text);
      if (v.kind == Kind::Dict) {
        flatten(d.items[i + 1], name, depth + 1, out, names, budget);
        continue;
      }
      if (!names.insert(name).second)
        throw Error(ErrorCode::DuplicateTensorName,
                    "the name occurs twice in the state dict (a dotted key and a nested dict can spell the same name)",
                    file_, name);
      out.tensors.push_back({std::move(name), static_cast<uint32_t>(v.integer)});
    }
  }

  // "'model' (dict of 12 tensors), 'epoch' (int)" for messages.
  std::string describe_entries(const Object& dict) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < dict.items.size() && parts.size() < kMaxListedKeys; i += 2) {
      const Object& k = p_.at(dict.items[i]);
      const Object& v = p_.at(dict.items[i + 1]);
      const std::string key = k.kind == Kind::String ? fmt::format("'{}'", k.text) : fmt::format("{} key", kind_with_article(k.kind));
      parts.push_back(fmt::format("{} ({})", key, kind_name(v.kind)));
    }
    if (parts.empty()) return "nothing";
    const size_t total = dict.items.size() / 2;
    const std::string more = total > parts.size() ? fmt::format(" and {} more", total - parts.size()) : "";
    return fmt::format("{}{}", fmt::join(parts, ", "), more);
  }

  const Pickle& p_;
  const std::string& file_;
  std::unordered_map<ObjId, int64_t> counts_;
};

}  // namespace

StateDict find_state_dict(const Pickle& pickle, const std::string& key, const std::string& file) {
  return Finder(pickle, file).find(key);
}

}  // namespace wl::pytorch
