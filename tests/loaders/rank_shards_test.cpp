// The tensor-parallel shard planner: even splits along the one differing dim, kv-head blocks
// replicated over consecutive ranks, fused parts at their row offsets, shard_dims (globs, regular
// expressions, ambiguity), every refusal, and plans made in the model's names under name_map=auto.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "loaders/rank_shards.hpp"
#include "test_util.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

using Shapes = std::vector<std::pair<std::string, Shape>>;
using Checkpoint = std::unordered_map<std::string, Shape>;

// A shard as a comparable, printable value: (from, dim, begin, end, row offset).
using Row = std::tuple<std::string, size_t, uint64_t, uint64_t, uint64_t>;
using Rows = std::vector<Row>;

Row rows(const std::string& from, uint64_t begin, uint64_t end, uint64_t at = 0) { return {from, 0, begin, end, at}; }

Rows flat(const std::vector<ParameterShard>& shards) {
  Rows out;
  for (const ParameterShard& s : shards) out.emplace_back(s.from, s.slice.dim, s.slice.begin, s.slice.end, s.row_offset);
  return out;
}

std::map<std::string, Rows> flat(const ParameterShards& plan) {
  std::map<std::string, Rows> out;
  for (const auto& [name, shards] : plan) out[name] = flat(shards);
  return out;
}

RankLayout rank_of(int64_t rank, int64_t size, std::vector<ShardDim> dims = {}) { return RankLayout{rank, size, std::move(dims)}; }

TEST(RankShards, ColumnRowAndVocabularyParallelSlicesFollowTheDimWhereShapesDiffer) {
  const Checkpoint ckpt{{"q.weight", {8, 6}}, {"o.weight", {6, 8}}, {"embed.weight", {30, 6}}, {"norm.weight", {6}}};
  const Shapes params{{"q.weight", {4, 6}}, {"o.weight", {6, 4}}, {"embed.weight", {15, 6}}, {"norm.weight", {6}}, {"extra", {2}}};
  const ParameterShards got = plan_rank_shards(params, ckpt, rank_of(1, 2));
  EXPECT_EQ(flat(got), (std::map<std::string, Rows>{{"q.weight", {rows("q.weight", 4, 8)}},
                                                     {"o.weight", {Row{"o.weight", 1, 4, 8, 0}}},
                                                     {"embed.weight", {rows("embed.weight", 15, 30)}}}));  // norm replicated, extra left to the load
}

TEST(RankShards, RowBlocksAreAnEvenSplitOrSharedByConsecutiveRanks) {
  EXPECT_EQ(rank_rows_begin(8, 4, 1, 2), 4u);
  for (uint64_t rank = 0; rank < 4; ++rank) EXPECT_EQ(rank_rows_begin(4, 2, rank, 4), rank / 2 * 2) << rank;  // 2 kv heads, 4 ranks
  EXPECT_EQ(rank_rows_begin(2, 2, 3, 4), 0u);  // one kv head: every rank holds it
  EXPECT_EQ(rank_rows_begin(8, 3, 0, 2), std::nullopt);
  EXPECT_EQ(rank_rows_begin(8, 4, 0, 3), std::nullopt);  // 2 blocks over 3 ranks
}

TEST(RankShards, FusedPartsTakeTheirRankSlicesAtTheirRowOffsets) {
  // 4 query heads, 2 kv heads, head_dim 2: q is 8 rows, k and v 4.
  const Checkpoint ckpt{{"l.q_proj.w", {8, 8}}, {"l.k_proj.w", {4, 8}}, {"l.v_proj.w", {4, 8}}};
  EXPECT_EQ(flat(plan_rank_shards(Shapes{{"l.qkv_proj.w", {8, 8}}}, ckpt, rank_of(1, 2)).at("l.qkv_proj.w")),
            (Rows{rows("l.q_proj.w", 4, 8), rows("l.k_proj.w", 2, 4, 4), rows("l.v_proj.w", 2, 4, 6)}));
  for (int64_t rank = 0; rank < 4; ++rank) {
    const uint64_t kv = uint64_t(rank) / 2 * 2, q = uint64_t(rank) * 2;
    EXPECT_EQ(flat(plan_rank_shards(Shapes{{"l.qkv_proj.w", {6, 8}}}, ckpt, rank_of(rank, 4)).at("l.qkv_proj.w")),
              (Rows{rows("l.q_proj.w", q, q + 2), rows("l.k_proj.w", kv, kv + 2, 2), rows("l.v_proj.w", kv, kv + 2, 4)}))
        << rank;
  }
  RankLayout none = rank_of(0, 2);
  none.fused = {};
  EXPECT_TRUE(plan_rank_shards(Shapes{{"l.qkv_proj.w", {8, 8}}}, ckpt, none).empty());  // left to the load: missing
  RankLayout custom = rank_of(0, 2);
  custom.fused = {{"kv", {"k_proj", "v_proj"}}};
  EXPECT_EQ(flat(plan_rank_shards(Shapes{{"l.kv.w", {4, 8}}}, ckpt, custom).at("l.kv.w")),
            (Rows{rows("l.k_proj.w", 0, 2), rows("l.v_proj.w", 0, 2, 2)}));
  const std::string msg = test::expect_error(ErrorCode::ShapeMismatch, [&] {
    plan_rank_shards(Shapes{{"l.qkv_proj.w", {4, 8}}}, ckpt, rank_of(0, 3));
  });
  EXPECT_NE(msg.find("part 'l.q_proj.w' has 8 rows, which tp_size=3 does not divide"), std::string::npos) << msg;
}

TEST(RankShards, FusedMoeParametersStackEachExpertsRankSlices) {
  // 2 experts, ff 4, hidden 6, under Qwen2-MoE's per-expert names; rank 1 of 2.
  Checkpoint ckpt;
  for (int e = 0; e < 2; ++e) {
    const std::string at = fmt::format("m.experts.{}.", e);
    ckpt[at + "gate_proj.weight"] = {4, 6}, ckpt[at + "up_proj.weight"] = {4, 6}, ckpt[at + "down_proj.weight"] = {6, 4};
  }
  const ParameterShards got =
      plan_rank_shards(Shapes{{"m.experts.w13_weight", {2, 4, 6}}, {"m.experts.w2_weight", {2, 6, 2}}}, ckpt, rank_of(1, 2));
  // w13: each expert's gate rows then up rows of this rank, at the expert's 4 rows of [2 * 4, 6].
  EXPECT_EQ(flat(got.at("m.experts.w13_weight")),
            (Rows{rows("m.experts.0.gate_proj.weight", 2, 4, 0), rows("m.experts.0.up_proj.weight", 2, 4, 2),
                  rows("m.experts.1.gate_proj.weight", 2, 4, 4), rows("m.experts.1.up_proj.weight", 2, 4, 6)}));
  // w2: each expert's columns of this rank, at its 6 rows of [2 * 6, 2].
  EXPECT_EQ(flat(got.at("m.experts.w2_weight")),
            (Rows{Row{"m.experts.0.down_proj.weight", 1, 2, 4, 0}, Row{"m.experts.1.down_proj.weight", 1, 2, 4, 6}}));
  const std::string msg = test::expect_error(ErrorCode::ShapeMismatch, [&] {
    plan_rank_shards(Shapes{{"m.experts.w13_weight", {2, 2, 6}}}, ckpt, rank_of(0, 3));
  });
  EXPECT_NE(msg.find("m.experts.0.gate_proj.weight"), std::string::npos) << msg;
  // Expert parallel: 1 whole expert per rank of 2 (rank 1: expert 1).
  EXPECT_EQ(flat(plan_rank_shards(Shapes{{"m.experts.w13_weight", {1, 8, 6}}}, ckpt, rank_of(1, 2)).at("m.experts.w13_weight")),
            (Rows{rows("m.experts.1.gate_proj.weight", 0, UINT64_MAX, 0), rows("m.experts.1.up_proj.weight", 0, UINT64_MAX, 4)}));
  const std::string count = test::expect_error(ErrorCode::ShapeMismatch, [&] {
    plan_rank_shards(Shapes{{"m.experts.w13_weight", {3, 8, 6}}}, ckpt, rank_of(0, 1));  // no expert 2
  });
  EXPECT_NE(count.find("holds 3 experts of the checkpoint's 2"), std::string::npos) << count;
}

TEST(RankShards, ShardDimsMatchGlobsOrWholeNameRegexesAndDisagreeingPatternsAreAmbiguous) {
  const Checkpoint ckpt{{"a.o_proj.weight", {8, 8}}};
  const Shapes params{{"a.o_proj.weight", {8, 4}}};
  const std::map<std::string, Rows> columns{{"a.o_proj.weight", {Row{"a.o_proj.weight", 1, 0, 4, 0}}}};
  EXPECT_EQ(flat(plan_rank_shards(params, ckpt, rank_of(0, 2, {{"*.o_proj.weight", 1}}))), columns);
  EXPECT_EQ(flat(plan_rank_shards(params, ckpt, rank_of(0, 2, {{R"(a\.o_proj\..*)", 1}}))), columns);
  EXPECT_EQ(flat(plan_rank_shards(params, ckpt, rank_of(0, 2, {{R"(o_proj\..*)", 0}}))), columns);  // a regex matches all of the name
  auto refusal = [&](ErrorCode code, std::vector<ShardDim> dims, const Shapes& p = {{"a.o_proj.weight", {8, 4}}}) {
    return test::expect_error(code, [&] { plan_rank_shards(p, ckpt, rank_of(0, 2, std::move(dims))); });
  };
  EXPECT_NE(refusal(ErrorCode::ShapeMismatch, {{"*o_proj*", std::nullopt}}).find("shard_dims makes it replicated"), std::string::npos);
  EXPECT_NE(refusal(ErrorCode::ShapeMismatch, {{"*.weight", 0}}).find("only dim 0 (from shard_dims) may differ"), std::string::npos);
  EXPECT_NE(refusal(ErrorCode::ShapeMismatch, {{"*", 2}}).find("shard_dims gives dim 2, outside the checkpoint's shape [8, 8]"),
            std::string::npos);
  EXPECT_NE(refusal(ErrorCode::ShapeMismatch, {{"*", 0}}, {{"a.o_proj.weight", {8, 8}}})
                .find("shard_dims splits dim 0, but this rank holds all of it"),
            std::string::npos);
  const std::string ambiguous = refusal(ErrorCode::InvalidArgument, {{"*.weight", 0}, {"a.*", 1}, {"a*", std::nullopt}});
  EXPECT_NE(ambiguous.find("'a.o_proj.weight'"), std::string::npos) << ambiguous;
  EXPECT_NE(ambiguous.find("dims [None, 0, 1] (None: replicated)"), std::string::npos) << ambiguous;
}

TEST(RankShards, ShapesNoRuleExplainsAreRefusedNamingTheParameterAndShapes) {
  auto refusal = [](const Shape& mine, const Shape& full, int64_t size) {
    return test::expect_error(ErrorCode::ShapeMismatch, [&] { plan_rank_shards(Shapes{{"w", mine}}, Checkpoint{{"w", full}}, rank_of(0, size)); });
  };
  EXPECT_NE(refusal({428, 16}, {3000, 16}, 7).find("dim 0 has 3000 rows, which tp_size=7 does not divide (splits must be even"),
            std::string::npos);
  EXPECT_NE(refusal({8, 4}, {8, 9}, 2).find("dim 1 has 9, which tp_size=2 does not divide"), std::string::npos);
  EXPECT_NE(refusal({4, 4}, {8, 8}, 2).find("[4, 4] on this rank, [8, 8] in the checkpoint (tp_size=2): a rank's slice must "
                                            "differ from the checkpoint in exactly one dimension"),
            std::string::npos);
  EXPECT_NE(refusal({2, 8}, {8, 8}, 2).find("a rank holds 4 (an even split) or a whole number of blocks replicated over ranks, not 2"),
            std::string::npos);
  EXPECT_NE(refusal({9, 8}, {8, 8}, 2).find("dim 0 is larger on this rank than in the checkpoint"), std::string::npos);
  EXPECT_NE(refusal({8}, {8, 8}, 2).find("must have the checkpoint's number of dimensions"), std::string::npos);
  EXPECT_NE(refusal({8}, {8, 8}, 2).find("tensor 'w'"), std::string::npos);
  EXPECT_TRUE(plan_rank_shards(Shapes{{"w", {4, 4}}}, Checkpoint{{"w", {8, 8}}}, rank_of(0, 1)).empty());  // one rank: the load checks
  test::expect_error(ErrorCode::InvalidArgument, [] { check_rank(2, 2); });
  test::expect_error(ErrorCode::InvalidArgument, [] { check_rank(0, 0); });
  test::expect_error(ErrorCode::InvalidArgument, [] { plan_rank_shards(Shapes{}, Checkpoint{}, rank_of(-1, 2)); });
}

// A Llama layer under Hugging Face's names (2 query heads of 4, 1 kv head, FFN 4, vocab 6), values
// distinct per tensor and element, with the head counts a config.json gives.
std::unique_ptr<WeightSource> hf_checkpoint() {
  const std::vector<std::pair<std::string, Shape>> tensors{
      {"model.embed_tokens.weight", {6, 8}},          {"model.layers.0.input_layernorm.weight", {8}},
      {"model.layers.0.self_attn.q_proj.weight", {8, 8}}, {"model.layers.0.self_attn.k_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.v_proj.weight", {4, 8}}, {"model.layers.0.self_attn.o_proj.weight", {8, 8}},
      {"model.layers.0.post_attention_layernorm.weight", {8}}, {"model.layers.0.mlp.gate_proj.weight", {4, 8}},
      {"model.layers.0.mlp.up_proj.weight", {4, 8}},  {"model.layers.0.mlp.down_proj.weight", {8, 4}},
      {"model.norm.weight", {8}},                     {"lm_head.weight", {6, 8}}};
  auto values = std::make_shared<std::vector<std::vector<float>>>();
  values->reserve(tensors.size());
  std::vector<MemoryTensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<float>& v = values->emplace_back(shape_numel(tensors[i].second));
    for (size_t e = 0; e < v.size(); ++e) v[e] = float(i * 1000 + e);
    out.push_back({tensors[i].first, DType::F32, tensors[i].second, {}, v.data(), values});
  }
  return WeightSource::from_memory("<memory>", std::move(out),
                                   {{"config.json", R"({"num_attention_heads": 2, "num_key_value_heads": 1})"}});
}

// The same layer under Meta's names, as each of `d` ranks holds it (the whole layer at 1; the kv head
// is replicated).
Model meta_model(uint64_t d) {
  Model m;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"tok_embeddings.weight", {6 / d, 8}},      {"layers.0.attention_norm.weight", {8}},
           {"layers.0.attention.wq.weight", {8 / d, 8}}, {"layers.0.attention.wk.weight", {4, 8}},
           {"layers.0.attention.wv.weight", {4, 8}},     {"layers.0.attention.wo.weight", {8, 8 / d}},
           {"layers.0.ffn_norm.weight", {8}},            {"layers.0.feed_forward.w1.weight", {4 / d, 8}},
           {"layers.0.feed_forward.w3.weight", {4 / d, 8}}, {"layers.0.feed_forward.w2.weight", {8, 4 / d}},
           {"norm.weight", {8}},                         {"output.weight", {6 / d, 8}}})
    m.add_parameter(name, shape, DType::F32);
  return m;
}

// Rows [begin, end) or columns of a [rows, cols] F32 parameter.
std::vector<float> part_of(const Parameter& p, size_t dim, uint64_t begin, uint64_t end) {
  const uint64_t cols = p.shape().size() == 2 ? p.shape()[1] : 1;
  const float* v = p.data.data<float>();
  std::vector<float> out;
  for (uint64_t r = 0; r < (p.shape().empty() ? 0 : p.shape()[0]); ++r)
    for (uint64_t c = 0; c < cols; ++c)
      if ((dim == 0 ? r : c) >= begin && (dim == 0 ? r : c) < end) out.push_back(v[r * cols + c]);
  return out;
}

TEST(RankShards, PlansInTheModelsNamesUnderNameMapAutoAndLoadsTheRightSlices) {
  auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"name_map", std::string("auto")}});
  const auto source = hf_checkpoint();
  Model whole = meta_model(1);
  loader->load_weights(whole, *source);  // q/k rows in Meta's interleaved layout
  for (int64_t rank = 0; rank < 2; ++rank) {
    Model mine = meta_model(2);
    const ParameterShards plan = plan_rank_shards(mine, *source, loader->options(), rank_of(rank, 2));
    EXPECT_EQ(flat(plan.at("layers.0.attention.wq.weight")),
              (Rows{rows("layers.0.attention.wq.weight", 4 * uint64_t(rank), 4 * uint64_t(rank) + 4)}));
    EXPECT_FALSE(plan.count("layers.0.attention.wk.weight"));  // one kv head: replicated
    for (auto& [name, shards] : plan) mine.find(name)->shards = shards;
    const LoadReport report = loader->load_weights(mine, *source);
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty());
    for (const Parameter& p : mine.parameters()) {
      const Parameter& full = *whole.find(p.name);
      const auto it = plan.find(p.name);
      const Slice s = it == plan.end() ? Slice{0, 0, UINT64_MAX} : it->second.at(0).slice;
      EXPECT_EQ(part_of(p, 0, 0, UINT64_MAX), part_of(full, s.dim, s.begin, s.end)) << p.name << " on rank " << rank;
    }
  }
}

TEST(RankShards, PlansUnderExplicitNameMapsAgainstTheMappedNames) {
  auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"strip_prefix", std::string("model.")}});
  Model m;
  m.add_parameter("embed_tokens.weight", {3, 8}, DType::F32);
  m.add_parameter("norm.weight", {8}, DType::F32);
  const ParameterShards plan = plan_rank_shards(m, *hf_checkpoint(), loader->options(), rank_of(1, 2));
  EXPECT_EQ(flat(plan), (std::map<std::string, Rows>{{"embed_tokens.weight", {rows("embed_tokens.weight", 3, 6)}}}));
}

}  // namespace
}  // namespace wl
