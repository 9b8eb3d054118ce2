// The IQ types' grids and sign table (format constants, generated from gguf-py into iq_grids.inc
// by scripts/gen_iq_grids.py).
#pragma once

#include <cstdint>

namespace wl::gguf::decoders {
#include "formats/gguf/iq_grids.inc"

// The sign of element j (0..7) under an 8-bit sign pattern: bit j set is negative. A table, not a
// branch: random signs would mispredict; multiplying by it is what ggml does, bit for bit.
inline constexpr float kSignOfBit[2] = {1.0f, -1.0f};
inline float sign_of(uint8_t signs, int j) { return kSignOfBit[(signs >> j) & 1]; }
}  // namespace wl::gguf::decoders
