#include "loaders/rank_shards.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <numeric>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "loaders/auto_name_map.hpp"
#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

Error shape_error(const std::string& name, const std::string& message) {
  return Error(ErrorCode::ShapeMismatch, "tensor-parallel load: " + message, "", name);
}

// A shard_dims entry ready to match: the pattern as a glob (backslashes literal, as in Python's
// fnmatch) and, when it is a valid regular expression, as one matching the whole name.
struct Pattern {
  std::string glob;
  std::optional<std::regex> regex;
  std::optional<int64_t> dim;
};

std::vector<Pattern> compile(const std::vector<ShardDim>& shard_dims) {
  std::vector<Pattern> out;
  for (const ShardDim& d : shard_dims) {
    Pattern p{d.pattern, std::nullopt, d.dim};
    try {
      p.regex.emplace(d.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {  // a glob such as "*.weight" is no regular expression
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string dim_text(const std::optional<int64_t>& dim) { return dim ? std::to_string(*dim) : "None"; }

// nullopt when no pattern matches `name`; otherwise the dim they give (nullopt inside: replicated).
std::optional<std::optional<int64_t>> forced_dim(const std::string& name, const std::vector<Pattern>& patterns) {
  std::set<std::optional<int64_t>> dims;  // nullopt sorts first, as "None" is listed
  for (const Pattern& p : patterns)
    if (::fnmatch(p.glob.c_str(), name.c_str(), FNM_NOESCAPE) == 0 || (p.regex && std::regex_match(name, *p.regex)))
      dims.insert(p.dim);
  if (dims.size() > 1) {
    std::vector<std::string> listed;
    for (const auto& d : dims) listed.push_back(dim_text(d));
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("tensor-parallel load: ambiguous: shard_dims patterns give dims [{}] (None: replicated); "
                            "make one pattern match it",
                            fmt::join(listed, ", ")),
                "", name);
  }
  if (dims.empty()) return std::nullopt;
  return *dims.begin();
}

// rank_rows_begin, or ShapeMismatch saying why `rows` of `what`'s `full` are no rank's rows.
uint64_t rows_begin(uint64_t full, uint64_t rows, const RankLayout& l, const std::string& what, const std::string& name) {
  if (auto begin = rank_rows_begin(full, rows, uint64_t(l.rank), uint64_t(l.size))) return *begin;
  const uint64_t size = uint64_t(l.size);
  if (full % size != 0)
    throw shape_error(name, fmt::format("{} has {} rows, which tp_size={} does not divide (splits must be even, as in "
                                        "vLLM and Megatron)",
                                        what, full, size));
  throw shape_error(name, fmt::format("{} has {} rows: a rank holds {} (an even split) or a whole number of blocks "
                                      "replicated over ranks, not {}",
                                      what, full, full / size, rows));
}

// The dim a parameter of its own name splits on, from shard_dims or else from where the shapes
// differ; nullopt: replicated.
std::optional<size_t> split_dim(const std::string& name, const Shape& shape, const Shape& full,
                                const std::optional<std::optional<int64_t>>& forced, const std::string& described) {
  if (shape.size() != full.size())
    throw shape_error(name, described + ": a rank's slice must have the checkpoint's number of dimensions");
  std::vector<size_t> differing;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != full[d]) differing.push_back(d);
  if (!forced) {
    if (differing.size() != 1)
      throw shape_error(name, described + ": a rank's slice must differ from the checkpoint in exactly one dimension, "
                                          "divided by tp_size");
    return differing[0];
  }
  const int64_t dim = **forced;
  if (dim < 0 || size_t(dim) >= full.size())
    throw shape_error(name, fmt::format("shard_dims gives dim {}, outside the checkpoint's shape {}", dim, shape_to_string(full)));
  if (std::any_of(differing.begin(), differing.end(), [&](size_t d) { return d != size_t(dim); }))
    throw shape_error(name, fmt::format("{}: only dim {} (from shard_dims) may differ", described, dim));
  return size_t(dim);
}

// The shard of a parameter that is one checkpoint tensor of its own name; none for the whole tensor.
std::vector<ParameterShard> split(const std::string& name, const Shape& shape, const Shape& full, const RankLayout& l,
                                  const std::optional<std::optional<int64_t>>& forced) {
  const std::string described = fmt::format("{} on this rank, {} in the checkpoint (tp_size={})", shape_to_string(shape),
                                            shape_to_string(full), l.size);
  if (!forced && (shape == full || l.size == 1)) return {};  // one rank: the load checks its shapes as always
  if (forced && !*forced) {
    if (shape != full) throw shape_error(name, described + ", but shard_dims makes it replicated");
    return {};
  }
  const size_t dim = *split_dim(name, shape, full, forced, described);
  const uint64_t total = full[dim], rows = shape[dim], size = uint64_t(l.size);
  if (rows > total)
    throw shape_error(name, fmt::format("{}: dim {} is larger on this rank than in the checkpoint", described, dim));
  if (rows == total && size > 1)
    throw shape_error(name, fmt::format("{}: shard_dims splits dim {}, but this rank holds all of it", described, dim));
  uint64_t begin = 0;
  if (dim == 0) {
    begin = rows_begin(total, rows, l, "dim 0", name);
  } else {
    if (total % size != 0)
      throw shape_error(name, fmt::format("{}: dim {} has {}, which tp_size={} does not divide (splits must be even, as "
                                          "in vLLM and Megatron)",
                                          described, dim, total, size));
    if (rows * size != total)
      throw shape_error(name, fmt::format("{}: dim {} must hold {} on each rank", described, dim, total / size));
    begin = uint64_t(l.rank) * rows;
  }
  return {ParameterShard{name, Slice{dim, begin, begin + rows}, 0}};
}

// The checkpoint names a fused parameter is stacked from (one of its name's components replaced
// by each part's), or none when it is not one or the checkpoint lacks a part.
std::vector<std::string> fused_parts(const std::string& name, const std::unordered_map<std::string, Shape>& checkpoint,
                                     const FusedParts& fused) {
  std::vector<std::string> segments;
  for (size_t begin = 0;;) {
    const size_t dot = name.find('.', begin);
    segments.push_back(name.substr(begin, dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto it = fused.find(segments[i]);
    if (it == fused.end() || it->second.empty()) continue;
    std::vector<std::string> names;
    for (const std::string& part : it->second) {
      std::vector<std::string> renamed = segments;
      renamed[i] = part;
      names.push_back(fmt::format("{}", fmt::join(renamed, ".")));
    }
    if (std::all_of(names.begin(), names.end(), [&](const std::string& n) { return checkpoint.count(n) > 0; })) return names;
  }
  return {};
}

// How many of each part's rows the rank holds: an even split of each, or the first part's even
// split and the rest of the rank's rows shared in proportion to the other parts' sizes (GQA).
std::vector<uint64_t> part_rows(const std::string& name, uint64_t rank_rows, const std::vector<std::string>& parts,
                                const std::vector<uint64_t>& totals, uint64_t size) {
  const uint64_t sum = std::accumulate(totals.begin(), totals.end(), uint64_t(0));
  std::vector<uint64_t> rows;
  if (rank_rows * size == sum) {
    for (uint64_t t : totals) rows.push_back(t / size);
    return rows;
  }
  const uint64_t first = totals[0] / size, rest_total = sum - totals[0];
  const uint64_t rest = rank_rows > first ? rank_rows - first : 0;
  const bool proportional =
      rest > 0 && rest_total > 0 && std::all_of(totals.begin() + 1, totals.end(), [&](uint64_t t) { return rest * t % rest_total == 0; });
  if (!proportional) {
    std::vector<std::string> listed;
    for (size_t i = 0; i < parts.size(); ++i) listed.push_back(fmt::format("{} {}", parts[i], totals[i]));
    throw shape_error(name, fmt::format("{} rows on this rank do not split into its parts' rank slices ({} rows; tp_size={})",
                                        rank_rows, fmt::join(listed, ", "), size));
  }
  rows.push_back(first);
  for (size_t i = 1; i < totals.size(); ++i) rows.push_back(rest * totals[i] / rest_total);
  return rows;
}

// Each part's rank slice (dim 0), stacked in order into the rank's fused parameter.
std::vector<ParameterShard> fuse(const std::string& name, const Shape& shape, const std::vector<std::string>& parts,
                                 const std::unordered_map<std::string, Shape>& checkpoint, const RankLayout& l) {
  std::vector<uint64_t> totals;
  for (const std::string& part : parts) {
    const Shape& s = checkpoint.at(part);
    if (s.empty() || shape.empty() || !std::equal(s.begin() + 1, s.end(), shape.begin() + 1, shape.end()))
      throw shape_error(name, fmt::format("{} on this rank but part '{}' is {}: parts stack along dim 0", shape_to_string(shape),
                                          part, shape_to_string(s)));
    totals.push_back(s[0]);
  }
  const std::vector<uint64_t> rows = part_rows(name, shape[0], parts, totals, uint64_t(l.size));
  std::vector<ParameterShard> shards;
  uint64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const uint64_t begin = rows_begin(totals[i], rows[i], l, fmt::format("part '{}'", parts[i]), name);
    shards.push_back(ParameterShard{parts[i], Slice{0, begin, begin + rows[i]}, offset});
    offset += rows[i];
  }
  return shards;
}

// The checkpoint's experts for a FusedMoE parameter (fused_moe_parts): [expert] its parts in row
// order, under the first naming the checkpoint uses; empty when it has none.
std::vector<std::vector<std::string>> checkpoint_experts(const std::string& name, const std::unordered_map<std::string, Shape>& checkpoint) {
  auto present = [&](const std::vector<std::string>& names) {
    return std::all_of(names.begin(), names.end(), [&](const std::string& n) { return checkpoint.count(n) > 0; });
  };
  for (size_t naming = 0; naming < fused_moe_parts(name, 0).size(); ++naming) {
    std::vector<std::vector<std::string>> experts;
    while (experts.size() < checkpoint.size() && present(fused_moe_parts(name, experts.size())[naming]))
      experts.push_back(fused_moe_parts(name, experts.size())[naming]);
    if (!experts.empty()) return experts;
  }
  return {};
}

// vLLM's FusedMoE parameters: each expert's parts placed at its rows of the parameter's
// [experts * rows, cols] (the planner reads a 3-D parameter so). As vLLM shards them, the shape
// says how: every expert, each rank with its rows of gate and of up (w13_weight) or its columns of
// down (w2_weight): tensor parallel; or experts / tp_size whole experts, rank r holding block r:
// expert parallel. None when the checkpoint has no such experts.
std::vector<ParameterShard> fuse_experts(const std::string& name, const Shape& shape,
                                         const std::unordered_map<std::string, Shape>& checkpoint, const RankLayout& l) {
  if (shape.size() != 3) return {};
  const std::vector<std::vector<std::string>> all = checkpoint_experts(name, checkpoint);
  if (all.empty()) return {};
  const uint64_t total = all.size(), size = uint64_t(l.size), rank = uint64_t(l.rank);
  const bool expert_parallel = size > 1 && shape[0] * size == total;
  if (shape[0] != total && !expert_parallel)
    throw shape_error(name, fmt::format("{} holds {} experts of the checkpoint's {}: all of them (tensor parallel) or {} / "
                                        "tp_size={} (expert parallel)",
                                        shape_to_string(shape), shape[0], total, total, size));
  const bool down = all[0].size() == 1;
  std::vector<ParameterShard> shards;
  for (uint64_t e = 0; e < shape[0]; ++e) {
    uint64_t row = e * shape[1];
    for (const std::string& part : all[expert_parallel ? rank * shape[0] + e : e]) {
      const Shape& s = checkpoint.at(part);
      const size_t dim = down ? 1 : 0;
      if (s.size() != 2 || (!expert_parallel && s[dim] % size != 0))
        throw shape_error(name, fmt::format("expert part '{}' is {}: its dim {} must split into tp_size={} ranks", part,
                                            shape_to_string(s), dim, size));
      const uint64_t n = expert_parallel ? s[dim] : s[dim] / size;
      shards.push_back(ParameterShard{part, expert_parallel ? Slice{} : Slice{dim, rank * n, (rank + 1) * n}, row});
      row += down ? s[0] : n;
    }
  }
  return shards;
}

// The checkpoint's tensor shapes under the names `options` give them for `model`.
std::unordered_map<std::string, Shape> mapped_shapes(const Model& model, const WeightSource& source, const LoadOptions& options) {
  std::unordered_map<std::string, Shape> out;
  if (options.auto_names) {
    Model scratch = model;  // auto_name_map declares fused parameters' parts on it
    LoadOptions lenient = options;
    lenient.strict = false;  // the load itself reports what the mapping leaves unexplained
    const AutoNameMap mapped = auto_name_map(scratch, source, lenient);  // named: a range-for over a temporary's member dangles
    for (const TensorInfo& t : mapped.renamed->tensors()) out.emplace(t.name, t.shape);
    return out;
  }
  for (const TensorInfo& t : source.tensors())
    if (const std::optional<std::string> mapped = options.names.map(t.name)) out.emplace(*mapped, t.shape);
  return out;
}

}  // namespace

const FusedParts& vllm_fused() {
  // The naming module's table, by last component: a fused parameter under any module path.
  static const FusedParts fused = [] {
    const auto last = [](const std::string& stem) { return stem.substr(stem.rfind('.') + 1); };
    FusedParts out;
    for (const auto& [stem, parts] : vllm_fused_stems())
      for (const std::string& part : parts) out[last(stem)].push_back(last(part));
    return out;
  }();
  return fused;
}

void check_rank(int64_t rank, int64_t size) {
  if (size < 1) throw Error(ErrorCode::InvalidArgument, fmt::format("tp_size must be a positive integer, not {}", size));
  if (rank < 0 || rank >= size)
    throw Error(ErrorCode::InvalidArgument, fmt::format("tp_rank must be in [0, {}), not {}", size, rank));
}

std::optional<uint64_t> rank_rows_begin(uint64_t full, uint64_t rows, uint64_t rank, uint64_t size) {
  if (rows * size == full) return rank * rows;
  if (rows > 0 && rows <= full && full % rows == 0 && size % (full / rows) == 0) return rank / (size / (full / rows)) * rows;
  return std::nullopt;
}

ParameterShards plan_rank_shards(const std::vector<std::pair<std::string, Shape>>& params,
                                 const std::unordered_map<std::string, Shape>& checkpoint, const RankLayout& layout) {
  check_rank(layout.rank, layout.size);
  const std::vector<Pattern> patterns = compile(layout.shard_dims);
  ParameterShards out;
  for (const auto& [name, shape] : params) {
    std::vector<ParameterShard> shards;
    if (const auto it = checkpoint.find(name); it != checkpoint.end()) {
      shards = split(name, shape, it->second, layout, forced_dim(name, patterns));
    } else if (const std::vector<std::string> parts = fused_parts(name, checkpoint, layout.fused); !parts.empty()) {
      shards = fuse(name, shape, parts, checkpoint, layout);
    } else if (const auto router = earlier_router_name(name); router && checkpoint.count(*router)) {
      shards = {ParameterShard{*router, Slice{}, 0}};  // replicated, as every router
    } else {
      shards = fuse_experts(name, shape, checkpoint, layout);
    }
    if (!shards.empty()) out[name] = std::move(shards);
  }
  return out;
}

ParameterShards plan_rank_shards(const Model& model, const WeightSource& source, const LoadOptions& options,
                                 const RankLayout& layout) {
  std::vector<std::pair<std::string, Shape>> params;
  for (const Parameter& p : model.parameters())
    if (p.shards.empty()) params.emplace_back(p.name, p.shape());
  return plan_rank_shards(params, mapped_shapes(model, source, options), layout);
}

}  // namespace wl
