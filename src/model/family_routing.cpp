#include "model/family_routing.hpp"

namespace wl {

void set_family_routing(const Family& family, MoeConfig& m) {
  if (family.experts == Family::Experts::GptOss) m.router_bias = m.expert_bias = true;
  if (family.experts == Family::Experts::Llama4) {
    m.scoring = MoeConfig::Scoring::Sigmoid;
    m.norm_topk_prob = false;
    m.weight_input = true;
    m.shared_expert_gated = false;
  }
}

}  // namespace wl
