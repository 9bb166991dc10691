// Attention's naive form (issue "Attention": "S materialised in DRAM, a separate softmax pass, then P·V"),
// mapped beside the flash forms so that the report shows what fusion buys. As PyTorch's math path runs it,
// per Q block of a core (AttentionStage::q_blocks, an even share of them a core):
//   1. S = scale * Q K^T tile by tile on the PE array (K's rows as W transposed, the K/V tiles of the flash
//      forms, paged and bshd caches included), rounded to the op's type by a `vec map fn=scale` and stored
//      into the program's S tensor [b * h * seq_q, seq_kv];
//   2. after the block's S stores, its rows in chunks: a chunk of S rows loaded, `vec softmax` (causal: each
//      row's shift) in place, stored into P (the same shape);
//   3. after the block's P stores, O = P V tile by tile into an fp32 accumulator, rounded by a
//      `vec map fn=scale scale=1` and stored.
// Causal: tiles past a block's last visible key are neither computed nor stored, so S and P hold, per block,
// its rows' first keys_seen(block) columns; the entries of those columns a row may not see (the diagonal
// tiles) hold their Q K^T but the softmax zeroes them in P, so P V reads only zeros there and never a column
// that was not written. A core pipelines its blocks: block i's S pass runs beside block i-1's softmax and
// block i-2's P V, each pass with its own double buffers (a chunk of S rows: softmax_rows x seq_kv, twice).
// DRAM bytes: Q and O once, each block's K/V tiles as the flash form reads them, and S and P written and read
// once each: 4 * sum over blocks of rows * keys_seen * element bytes.
#pragma once

#include <cstdint>
#include <string>

#include "arch/isa/program.hpp"
#include "arch/spec.hpp"
#include "mapper/attention/stage.hpp"
#include "mapper/cost.hpp"
#include "mapper/mapping.hpp"
#include "ops/op.hpp"

namespace tessera::mapper {

// SRAM bytes of the naive form's buffers for blocks of `rows` rows, K/V tiles of `cols` keys and softmax
// chunks of `softmax_rows` rows.
int64_t naive_sram_bytes(const AttentionStage& stage, int64_t rows, int64_t cols, int64_t softmax_rows);
// The most rows (rows, then halving) of a softmax chunk with which the buffers fit `sram_bytes`; 0 if a
// single row of S does not.
int64_t naive_softmax_rows(const AttentionStage& stage, int64_t rows, int64_t cols, int64_t sram_bytes);

Cost evaluate_naive(const AttentionStage& stage, const Mapping& mapping, const arch::ArchSpec& spec);
arch::Program lower_naive(const AttentionStage& stage, const ops::Op& op, uint64_t seed,
                          const Mapping& mapping, const arch::ArchSpec& spec,
                          const std::string& program_name);
std::string describe_naive(const Mapping& mapping);

// DRAM bytes of S and P that the naive form moves: each written once and read once.
int64_t naive_intermediate_bytes(const AttentionStage& stage, int64_t block_rows);

}  // namespace tessera::mapper
