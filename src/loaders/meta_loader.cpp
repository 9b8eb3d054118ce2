// "meta": Meta's original Llama checkpoints: a directory with params.json and consolidated.NN.pth,
// the model-parallel shards of one model. Each tensor is presented whole, under its Hugging Face
// name, assembled from its shards' pieces (TensorInfo::parts: read straight into their blocks),
// with q/k rows in Hugging Face's rotary layout (TensorInfo::row_order).
#include <algorithm>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loaders/builtin_loaders.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/name_schemes.hpp"
#include "weightloader/registry.hpp"

namespace wl {

namespace {

// consolidated.NN.pth files of `dir`, in shard order.
std::vector<std::string> shard_files(const Opener& files, const std::string& dir) {
  static const std::regex shard(R"(consolidated\.(\d+)\.pth)");
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const std::string& name : files.list(dir)) {
    std::smatch m;
    const std::string base = base_name(name);
    if (std::regex_match(base, m, shard)) found.emplace_back(std::stoull(m[1]), name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i].first != i)
      throw Error(ErrorCode::IndexFileMissing, fmt::format("shard {} is missing: consolidated.NN.pth must count from 00 without gaps", i), dir);
    out.push_back(found[i].second);
  }
  if (out.empty()) throw Error(ErrorCode::NoMatchingFiles, "no consolidated.NN.pth shard", dir);
  return out;
}

struct Params {
  uint64_t dim = 0, n_heads = 0, n_kv_heads = 0;
  const char* kv_field = "n_kv_heads";  // where n_kv_heads came from: "n_heads" when params.json has none
};

Params read_params(const std::string& text, const std::string& file) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto field = [&](const char* key, bool required) -> uint64_t {
    if (!j.is_object() || !j.contains(key) || j[key].is_null()) {
      if (required) throw Error(ErrorCode::ConfigInvalid, fmt::format("field '{}': missing", key), file);
      return 0;
    }
    if (!j[key].is_number_unsigned() || j[key].get<uint64_t>() == 0)
      throw Error(ErrorCode::ConfigInvalid, fmt::format("field '{}': {} is not a positive integer", key, j[key].dump()), file);
    return j[key].get<uint64_t>();
  };
  if (j.is_discarded()) throw Error(ErrorCode::ConfigInvalid, "not valid JSON", file);
  Params p;
  p.dim = field("dim", true);
  p.n_heads = field("n_heads", true);
  p.n_kv_heads = field("n_kv_heads", false);
  if (!p.n_kv_heads) {
    p.n_kv_heads = p.n_heads;
    p.kv_field = "n_heads";
  }
  return p;
}

// The dim Meta's model-parallel code splits a tensor along (by its name; the embedding by shape),
// or nullopt for a replicated one.
std::optional<size_t> split_dim(const std::string& canonical, const std::vector<const TensorInfo*>& pieces, const Params& params,
                                const std::string& file) {
  const TensorInfo& first = *pieces.front();
  if (first.shape.size() != 2 || pieces.size() == 1) return std::nullopt;
  for (const char* rows : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj.", "lm_head."})
    if (canonical.find(rows) != std::string::npos) return 0;
  for (const char* cols : {".o_proj.", ".down_proj."})
    if (canonical.find(cols) != std::string::npos) return 1;
  if (canonical == "model.embed_tokens.weight") {  // Llama 1/2: along the model width; Llama 3: along the vocabulary
    if (first.shape[1] == params.dim) return 0;
    if (first.shape[1] * pieces.size() == params.dim) return 1;
  }
  throw Error(ErrorCode::ConfigInvalid,
              fmt::format("{} of {} shards cannot be assembled: expected a norm, a projection or the embedding "
                          "(width {} from params.json)",
                          shape_to_string(first.shape), pieces.size(), params.dim),
              file, first.name);
}

class MetaLoader final : public WeightLoader {
 public:
  std::unique_ptr<WeightSource> get_weights(const std::string& dir, const LoadOptions& call) const override {
    const std::shared_ptr<const Opener> session = session_opener(call);
    const Opener& files = *session;
    if (!files.exists(dir)) throw Error(ErrorCode::FileNotFound, "no such directory", dir);
    const std::string params_file = files.join(dir, "params.json");
    if (!files.is_directory(dir) || !files.exists(params_file))
      throw Error(ErrorCode::ConfigMissing, "a Meta Llama checkpoint is a directory with params.json and consolidated.NN.pth", dir);
    const std::shared_ptr<ByteSource> params_source = files.open(params_file);
    const std::string params_text = params_source->read_string(0, params_source->size());
    const Params params = read_params(params_text, params_file);

    const FileFormat* pytorch = formats_of(call.context).find("pytorch");
    if (!pytorch) throw Error(ErrorCode::InvalidArgument, "format 'pytorch' is not available in this build");
    std::vector<std::unique_ptr<WeightSource>> shards;
    for (const std::string& f : shard_files(files, dir)) shards.push_back(open_files(*pytorch, {f}, f, session));

    Catalogue merged{{}, {}, {{"params.json", params_text}}};  // each shard's files once, its pieces' indices moved onto them
    for (const TensorInfo& t : shards.front()->tensors()) {
      std::vector<const TensorInfo*> pieces;
      for (const auto& shard : shards) {
        const TensorInfo* piece = shard->find(t.name);
        if (!piece) throw Error(ErrorCode::IndexTensorMissing, fmt::format("not in shard {}", shard->origin()), dir, t.name);
        pieces.push_back(piece);
      }
      if (scheme_drops("meta", t.name)) continue;  // rope.freqs: recomputed by every engine
      const auto canonical = to_canonical("meta", t.name);
      if (!canonical)
        throw Error(ErrorCode::UnexpectedTensors, "not a tensor of Meta's Llama (tok_embeddings, layers.N.*, norm, output)",
                    shards.front()->origin(), t.name);
      TensorInfo whole = merged.adopt(*pieces.front(), shards.front()->files());
      whole.name = canonical->name;
      const std::optional<size_t> dim = split_dim(canonical->name, pieces, params, shards.front()->origin());
      if (dim) {
        whole.parts.clear();
        for (size_t s = 0; s < pieces.size(); ++s) whole.parts.push_back(merged.adopt(*pieces[s], shards[s]->files()));
        whole.parts_dim = *dim;
        whole.shape[*dim] = 0;
        whole.nbytes = 0;
        for (size_t s = 0; s < pieces.size(); ++s) {
          const TensorInfo* p = pieces[s];
          if (p->shape.size() != whole.shape.size())
            throw Error(ErrorCode::ConfigInvalid, fmt::format("rank {} here but {} in shard 0", p->shape.size(), whole.shape.size()),
                        shards[s]->file_of(*p), t.name);
          whole.shape[*dim] += p->shape[*dim];
          whole.nbytes += p->nbytes;
        }
      } else {
        for (size_t s = 0; s < pieces.size(); ++s)
          if (pieces[s]->shape != whole.shape)
            throw Error(ErrorCode::ConfigInvalid,
                        fmt::format("replicated tensor is {} here but {} in shard 0", shape_to_string(pieces[s]->shape),
                                    shape_to_string(whole.shape)),
                        shards[s]->file_of(*pieces[s]), t.name);
      }
      // An empty tensor has no rows to reorder (and its row count, unbounded by the file, must not size an allocation).
      if (canonical->rotary && whole.numel() > 0) {
        const HeadCountOrigin origin{ErrorCode::ConfigInvalid,
                                     fmt::format("params.json field '{}'", canonical->kv ? params.kv_field : "n_heads"),
                                     params_file};
        whole.row_order = rotary_row_order(whole.shape.at(0), canonical->kv ? params.n_kv_heads : params.n_heads,
                                           RotaryOrder::InterleavedAsHf, origin, t.name);
      }
      merged.tensors.push_back(std::move(whole));
    }
    return std::make_unique<WeightSource>("pytorch", dir, std::move(merged), session);
  }
};

}  // namespace

bool is_meta_checkpoint(const Opener& files, const std::string& dir) {
  if (!files.exists(files.join(dir, "params.json"))) return false;
  const std::vector<std::string> names = files.list(dir);
  return std::any_of(names.begin(), names.end(), [](const std::string& n) { return base_name(n) == "consolidated.00.pth"; });
}

void register_meta_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "meta",
      LoaderSpec{
          .description = "Meta's original Llama checkpoint: a directory with params.json and consolidated.NN.pth "
                         "model-parallel shards, presented as one model under Hugging Face names (q/k rows in its layout; "
                         "each shard read straight into its block)",
          .kwargs = {},
          .make = [](const Kwargs&) -> std::unique_ptr<WeightLoader> { return std::make_unique<MetaLoader>(); },
      });
}

}  // namespace wl
