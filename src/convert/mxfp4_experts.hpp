// gpt-oss's MXFP4 experts written to GGUF as MXFP4 blocks, repacked from the checkpoint's bytes as
// llama.cpp's converter repacks them (GptOssModel.repack_mxfp4), never decoded and re-quantised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "formats/mxfp4_stored.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

// The stored blocks of `t` when its part split as `how` can be written as GGUF MXFP4 blocks: `t`
// is an MXFP4 layer's dense [E, 32 G, R] and the split takes columns (rows of the blocks, keeping
// every block of 32 whole) and transposes them into [E, R / n, 32 G], so that the part's rows run
// along the blocks as ggml's do. None otherwise (written decoded).
std::optional<quant::Mxfp4Stored> mxfp4_part_blocks(const TensorInfo& t, const StoredParts& how);

// One ggml block_mxfp4 from a checkpoint block: the E8M0 scale byte as it is, then 16 bytes whose
// byte j holds element j in its low nibble and element j + 16 in its high one (the checkpoint's
// byte j holds elements 2j and 2j + 1).
void ggml_mxfp4_block(uint8_t scale, const uint8_t* codes, uint8_t* out);

// Writes part `index` of the split `how` expert by expert (one expert's blocks in memory at a time)
// into the writer's current entry, of GGUF type MXFP4; returns the bytes written.
uint64_t write_mxfp4_part(const WeightSource& s, const quant::Mxfp4Stored& m, const StoredParts& how, size_t index,
                          GgufStreamWriter& writer);

}  // namespace wl
