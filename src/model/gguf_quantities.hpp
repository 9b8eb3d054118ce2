// The one mapping from the quantities that GGUF keys carry (src/families/family.hpp's GgufQuantity)
// to the engine's model description, used by the GGUF reader (gguf_config.cpp) and the converter's
// writer (src/convert/gguf_keys.cpp) alike.
#pragma once

#include "families/family.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

// The quantity in `c` (0: unknown or none).
double gguf_quantity(const LlamaConfig& c, GgufQuantity q);
void set_gguf_quantity(LlamaConfig& c, GgufQuantity q, double value);
// How the key is stored: as an integer, a float or a bool (uint32, float32, bool).
enum class GgufStored { UInt32, Float32, Bool };
GgufStored gguf_quantity_stored(GgufQuantity q);
// The key's value when a file leaves it out, from the quantities `c` holds already (the keys before
// it); nullopt when llama.cpp requires it.
std::optional<double> gguf_absent_value(const GgufKey& k, const LlamaConfig& c);

}  // namespace wl
