#include "families/family.hpp"

namespace wl {

// Qwen2: q/k/v biases always, sliding layers from max_window_layers when use_sliding_window.
extern const Family kQwen2{.model_type = "qwen2", .architecture = "Qwen2ForCausalLM", .window = Family::Window::FromLayer,
                           .biases = Family::Biases::QkvOnly, .follows_layer_types = true, .tensor_splits = splits::kDense,
                           .gguf = {.name = "qwen2"}};

}  // namespace wl
