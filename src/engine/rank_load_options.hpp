// What one rank of the engine reads of a checkpoint: the names it drops, shared by LLM's loads
// and by plan_model's plans of them.
#pragma once

#include "engine/tensor_parallel.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/loader.hpp"

namespace wl {

// Every rank: the engine never takes rotary tables, nor lm_head when the embeddings are tied, nor a
// multimodal model's tensors outside its language model (whose language_model. prefix it strips).
void drop_unused_by_engine(NameMapping& names, const LlamaConfig& config);

// `base` for rank `part.rank`: row-parallel biases are rank 0's (added once after the all-reduce),
// and with expert parallelism the other ranks' experts are theirs to read.
LoadOptions rank_load_options(LoadOptions base, const LlamaConfig& config, const RankPartition& part);

}  // namespace wl
