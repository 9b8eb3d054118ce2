#include "loaders/auto_name_map.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

// A model name to fill: a whole parameter's name, or the checkpoint name one of its shards reads.
struct Target {
  std::string name;
  std::optional<Shape> shape;  // whole parameters only
  Parameter* fusable = nullptr;  // a whole parameter whose canonical name is fused (qkv_proj, gate_up_proj)
};

// A checkpoint tensor after options.names: its index in the catalogue and its name so far.
struct Entry {
  size_t index;
  std::string name;
};

// One way to map the checkpoint's names onto the model's: each scheme with its wrapper prefix.
struct Candidate {
  DetectedScheme from, to;
  size_t matched = 0;        // targets explained
  size_t shapes = 0;         // of those, with agreeing shapes
  bool fused = false;        // some target assembled from parts
  // entry index → target (or part) name it takes; fused targets → their part names.
  std::map<size_t, std::string> renames;
  std::map<std::string, std::vector<std::string>> fusions;
  std::map<size_t, bool> rotary;  // entries whose q/k rows change layout → whether a k projection (kv heads)

  std::string label() const {
    auto side = [](const DetectedScheme& d) { return d.prefix.empty() ? d.scheme : fmt::format("{}[{}]", d.scheme, d.prefix); };
    return fmt::format("{} → {}", side(from), fused ? fmt::format("{} (fused)", side(to)) : side(to));
  }
};

std::optional<std::string> canonical_in(const DetectedScheme& d, std::string_view name) {
  if (!name.starts_with(d.prefix)) return std::nullopt;
  auto c = to_canonical(d.scheme, name.substr(d.prefix.size()));
  if (!c) return std::nullopt;
  return std::move(c->name);
}

std::optional<std::string> rendered_in(const DetectedScheme& d, const std::string& canonical) {
  auto n = from_canonical(d.scheme, canonical);
  if (!n) return std::nullopt;
  return d.prefix + *n;
}

void mark_rotary(Candidate& c, size_t entry, std::string_view canonical) {
  const bool q = canonical.find(".self_attn.q_proj.") != std::string_view::npos;
  const bool k = canonical.find(".self_attn.k_proj.") != std::string_view::npos;
  if (q || k) c.rotary[entry] = k;
}

Candidate score(const DetectedScheme& from, const DetectedScheme& to, const std::vector<Entry>& entries,
                const std::vector<Target>& targets, const WeightSource& source) {
  Candidate c;
  c.from = from;
  c.to = to;
  std::unordered_map<std::string, size_t> by_canonical;  // canonical name → entry
  std::unordered_map<std::string, size_t> by_name;       // names the scheme leaves as they are → entry
  for (const Entry& e : entries) {
    if (auto canonical = canonical_in(from, e.name)) by_canonical.emplace(*canonical, e.index);
    else by_name.emplace(e.name, e.index);
  }
  const bool reorder = interleaved_rotary(from.scheme) != interleaved_rotary(to.scheme);
  for (const Target& t : targets) {
    const std::optional<std::string> canonical = canonical_in(to, t.name);
    if (canonical) {
      if (auto it = by_canonical.find(*canonical); it != by_canonical.end()) {
        ++c.matched;
        const TensorInfo& info = source.tensors()[it->second];
        if (!t.shape || *t.shape == info.shape) ++c.shapes;
        c.renames[it->second] = t.name;
        if (reorder) mark_rotary(c, it->second, *canonical);
        continue;
      }
      const std::vector<std::string> parts = t.fusable ? fused_parts(*canonical) : std::vector<std::string>{};
      if (!parts.empty() && std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return by_canonical.count(p); })) {
        ++c.matched;
        c.fused = true;
        uint64_t rows = 0;
        bool agree = true;
        std::vector<std::string> names;
        for (const std::string& p : parts) {
          const size_t entry = by_canonical.at(p);
          const Shape& s = source.tensors()[entry].shape;
          agree = agree && !s.empty() && s.size() == t.shape->size() && std::equal(s.begin() + 1, s.end(), t.shape->begin() + 1);
          rows += s.empty() ? 0 : s[0];
          const std::string as = rendered_in(to, p).value_or(p);
          c.renames[entry] = as;
          if (reorder) mark_rotary(c, entry, p);
          names.push_back(as);
        }
        if (agree && rows == (*t.shape)[0]) ++c.shapes;
        c.fusions[t.name] = std::move(names);
        continue;
      }
    }
    if (auto it = by_name.find(t.name); it != by_name.end()) {  // the same name on both sides, outside any scheme
      ++c.matched;
      if (!t.shape || *t.shape == source.tensors()[it->second].shape) ++c.shapes;
      c.renames[it->second] = t.name;
    }
  }
  return c;
}

// The head counts of the q and k projections, each with where it came from (for its error).
struct HeadCounts {
  uint64_t q = 0, k = 0;
  HeadCountOrigin q_origin, k_origin;
};

// Head counts from the configuration the checkpoint carries, named after the checkpoint's own
// format: params.json and config.json fields (ConfigInvalid), GGUF keys (GgufHeadCount), the
// llama2.c header's fields (Llama2cInconsistentHeads).
std::optional<HeadCounts> head_counts(const WeightSource& source) {
  const auto& m = source.metadata();
  auto counts = [&](uint64_t h, std::optional<uint64_t> k, ErrorCode code, const std::string& heads_field,
                    const std::string& kv_field) {
    return HeadCounts{h, k.value_or(h), {code, heads_field, source.origin()}, {code, k ? kv_field : heads_field, source.origin()}};
  };
  auto from_json = [&](const char* file, const char* heads, const char* kv) -> std::optional<HeadCounts> {
    auto it = m.find(file);
    if (it == m.end()) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    if (!j.is_object() || !j.contains(heads) || !j[heads].is_number_unsigned()) return std::nullopt;
    const bool has_kv = j.contains(kv) && j[kv].is_number_unsigned();
    return counts(j[heads].get<uint64_t>(), has_kv ? std::optional(j[kv].get<uint64_t>()) : std::nullopt,
                  ErrorCode::ConfigInvalid, fmt::format("{} field '{}'", file, heads), fmt::format("{} field '{}'", file, kv));
  };
  auto from_keys = [&](const char* heads, const char* kv, ErrorCode code) -> std::optional<HeadCounts> {
    auto it = m.find(heads);
    if (it == m.end()) return std::nullopt;
    try {
      auto k = m.find(kv);
      return counts(std::stoull(it->second), k == m.end() ? std::nullopt : std::optional(std::stoull(k->second)), code,
                    heads, kv);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  if (auto h = from_json("params.json", "n_heads", "n_kv_heads")) return h;
  if (auto h = from_json("config.json", "num_attention_heads", "num_key_value_heads")) return h;
  if (auto h = from_keys("llama.attention.head_count", "llama.attention.head_count_kv", ErrorCode::GgufHeadCount)) return h;
  return from_keys("n_heads", "n_kv_heads", ErrorCode::Llama2cInconsistentHeads);
}

// q/k rows of `t` read in the other rotary layout: interleaved → Hugging Face's halves, or back.
void reorder_rotary(TensorInfo& t, bool k, bool from_interleaved, const WeightSource& source) {
  if (t.numel() == 0) return;
  const auto heads = head_counts(source);
  if (!heads)
    throw Error(ErrorCode::ConfigMissing,
                "its q/k rows must change rotary layout, which needs the number of attention heads: no params.json, "
                "config.json or GGUF llama.attention.head_count beside the checkpoint",
                source.origin(), t.name);
  const std::vector<uint64_t> order =
      rotary_row_order(t.shape[0], k ? heads->k : heads->q,
                       from_interleaved ? RotaryOrder::InterleavedAsHf : RotaryOrder::HfAsInterleaved,
                       k ? heads->k_origin : heads->q_origin, t.name);
  std::vector<uint64_t> composed(order.size());
  for (size_t i = 0; i < order.size(); ++i) composed[i] = t.row_order.empty() ? order[i] : t.row_order[order[i]];
  t.row_order = std::move(composed);
}

std::string candidates_text(const std::vector<Candidate>& all, size_t total) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < all.size() && i < 6; ++i)
    lines.push_back(fmt::format("{} {} of {} (shapes agree: {})", all[i].label(), all[i].matched, total, all[i].shapes));
  return fmt::format("candidates: {}", fmt::join(lines, "; "));
}

// What the model wants, by name: whole parameters and the parts its shards name.
std::vector<Target> model_targets(Model& model) {
  std::vector<Target> all;
  for (Parameter& p : model.parameters()) {
    if (!p.shards.empty()) {
      for (const ParameterShard& s : p.shards) all.push_back({s.from, std::nullopt, nullptr});
      continue;
    }
    all.push_back({p.name, p.shape(), p.shape().empty() ? nullptr : &p});
  }
  return all;
}

// The explicit mapping (options.names) first: a tensor it renames onto a model name is settled, one
// it drops is dropped; the rest are entries for the schemes to explain.
struct ExplicitNames {
  std::vector<Entry> entries;
  std::map<size_t, std::string> settled;  // tensor index → model name
  std::unordered_set<std::string> settled_targets;
  std::vector<bool> dropped;
};

ExplicitNames apply_explicit_names(const std::vector<TensorInfo>& tensors, const NameMapping& names,
                                   const std::vector<Target>& all_targets) {
  std::unordered_set<std::string> target_names;
  for (const Target& t : all_targets) target_names.insert(t.name);
  ExplicitNames out;
  out.dropped.assign(tensors.size(), false);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::optional<std::string> mapped = names.map(tensors[i].name);
    if (!mapped) {
      out.dropped[i] = true;
    } else if (*mapped != tensors[i].name && target_names.count(*mapped)) {
      out.settled[i] = *mapped;
      out.settled_targets.insert(*mapped);
    } else {
      out.entries.push_back({i, *mapped});
    }
  }
  return out;
}

// Every scheme the checkpoint's names fit against every scheme the model's fit, best first.
std::vector<Candidate> ranked_candidates(const std::vector<Entry>& entries, const std::vector<Target>& targets,
                                         const WeightSource& source) {
  std::vector<std::string> entry_names, model_names;
  for (const Entry& e : entries) entry_names.push_back(e.name);
  for (const Target& t : targets) model_names.push_back(t.name);
  std::vector<Candidate> candidates;
  for (const DetectedScheme& from : rank_name_schemes(entry_names))
    for (const DetectedScheme& to : rank_name_schemes(model_names))
      if (from.matched > 0 && to.matched > 0) candidates.push_back(score(from, to, entries, targets, source));
  if (candidates.empty()) candidates.push_back(score({"", "", 0, 0}, {"", "", 0, 0}, entries, targets, source));
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::pair(a.matched, a.shapes) > std::pair(b.matched, b.shapes);
  });
  return candidates;
}

// NameSchemeAmbiguous when another candidate scores as well and maps differently; under strict,
// NameSchemePartial when the best leaves model names unexplained.
void check_best(const std::vector<Candidate>& candidates, const std::vector<Target>& targets, size_t settled,
                size_t total, bool strict, const WeightSource& source) {
  const Candidate& best = candidates.front();
  for (size_t i = 1; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (std::pair(c.matched, c.shapes) != std::pair(best.matched, best.shapes)) break;
    if (c.renames != best.renames || c.fusions != best.fusions || c.rotary != best.rotary)
      throw Error(ErrorCode::NameSchemeAmbiguous,
                  fmt::format("name_map=auto: {} and {} explain the model's names equally well; map the names "
                              "explicitly (strip_prefix, rename, regex_rename); {}",
                              best.label(), c.label(), candidates_text(candidates, targets.size())),
                  source.origin());
  }
  if (!strict || best.matched >= targets.size()) return;
  std::unordered_set<std::string> explained;
  for (const auto& [entry, name] : best.renames) explained.insert(name);
  for (const auto& [name, parts] : best.fusions) explained.insert(name);
  std::vector<std::string> left;
  for (const Target& t : targets)
    if (!explained.count(t.name) && left.size() < 8) left.push_back(t.name);
  throw Error(ErrorCode::NameSchemePartial,
              fmt::format("name_map=auto: the best mapping, {}, explains {} of the model's {} names (unexplained: "
                          "{}{}); {} (map the rest explicitly, or load with strict=false)",
                          best.label(), best.matched + settled, total, fmt::join(left, ", "),
                          targets.size() - best.matched > left.size() ? ", ..." : "", candidates_text(candidates, targets.size())),
              source.origin());
}

// The catalogue under the model's names (q/k rows reordered where the layouts differ); the tensors
// no model takes go to `skipped`.
std::vector<TensorInfo> renamed_tensors(const WeightSource& source, const ExplicitNames& given, const Candidate& best,
                                        const NameMapping& names, std::vector<std::string>& skipped) {
  const std::vector<TensorInfo>& tensors = source.tensors();
  std::vector<TensorInfo> renamed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (given.dropped[i]) {
      skipped.push_back(tensors[i].name);
      continue;
    }
    TensorInfo t = tensors[i];
    if (auto s = given.settled.find(i); s != given.settled.end()) {
      t.name = s->second;
    } else if (auto r = best.renames.find(i); r != best.renames.end()) {
      if (auto k = best.rotary.find(i); k != best.rotary.end())
        reorder_rotary(t, k->second, interleaved_rotary(best.from.scheme), source);
      t.name = r->second;
    } else {
      std::string name = names.map(t.name).value_or(t.name);
      if (!best.from.scheme.empty() && name.starts_with(best.from.prefix) &&
          scheme_drops(best.from.scheme, std::string_view(name).substr(best.from.prefix.size()))) {
        skipped.push_back(tensors[i].name);
        continue;
      }
      t.name = std::move(name);
    }
    renamed.push_back(std::move(t));
  }
  return renamed;
}

// Fused parameters read their parts, stacked along dim 0.
void stack_fusions(Model& model, const Candidate& best, const std::vector<TensorInfo>& renamed) {
  std::unordered_map<std::string, const TensorInfo*> by_name;
  for (const TensorInfo& t : renamed) by_name.emplace(t.name, &t);
  for (const auto& [param, parts] : best.fusions) {
    Parameter* p = model.find(param);
    uint64_t row = 0;
    for (const std::string& part : parts) {
      p->shards.push_back({part, Slice{}, row});
      row += by_name.at(part)->shape.at(0);
    }
  }
}

}  // namespace

AutoNameMap auto_name_map(Model& model, const WeightSource& source, const LoadOptions& options) {
  const std::vector<Target> all_targets = model_targets(model);
  const ExplicitNames given = apply_explicit_names(source.tensors(), options.names, all_targets);
  std::vector<Target> targets;
  for (const Target& t : all_targets)
    if (!given.settled_targets.count(t.name)) targets.push_back(t);
  const std::vector<Candidate> candidates = ranked_candidates(given.entries, targets, source);
  const size_t settled = given.settled_targets.size(), total = all_targets.size();
  check_best(candidates, targets, settled, total, options.strict, source);
  const Candidate& best = candidates.front();

  AutoNameMap out;
  std::vector<TensorInfo> renamed = renamed_tensors(source, given, best, options.names, out.skipped);
  stack_fusions(model, best, renamed);
  out.match = NameMatch{best.from.scheme.empty() ? "none" : best.from.scheme, best.from.prefix,
                        best.to.scheme.empty() ? "none" : (best.fused ? "vllm" : best.to.scheme), best.to.prefix,
                        best.matched + settled, total};
  out.renamed = std::make_unique<WeightSource>(source.format(), source.origin(),
                                               Catalogue{source.files(), std::move(renamed), source.metadata()}, source.opener());
  return out;
}

std::vector<std::optional<std::string>> canonical_names(const WeightSource& source, const NameMapping& names) {
  std::vector<std::string> mapped;
  for (const TensorInfo& t : source.tensors()) mapped.push_back(names.map(t.name).value_or(t.name));
  const DetectedScheme d = detect_name_scheme(mapped);
  std::vector<std::optional<std::string>> out;
  for (size_t i = 0; i < mapped.size(); ++i) {
    const std::string& n = mapped[i];
    if (!names.map(source.tensors()[i].name)) {
      out.push_back(std::nullopt);
      continue;
    }
    if (!d.scheme.empty() && n.starts_with(d.prefix)) {
      const std::string_view rest = std::string_view(n).substr(d.prefix.size());
      if (scheme_drops(d.scheme, rest)) {
        out.push_back(std::nullopt);
        continue;
      }
      if (auto c = to_canonical(d.scheme, rest)) {
        out.push_back(std::move(c->name));
        continue;
      }
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace wl
