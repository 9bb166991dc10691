#include "mapper/attention_program.hpp"

#include <fmt/format.h>

#include <cmath>

#include "arch/isa/vec_op.hpp"
#include "mapper/program_header.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper::attention {

namespace {

uint64_t align64(uint64_t address) {
  return (address + 63) / 64 * 64;
}

}  // namespace

Buffers buffers_of(int64_t rows, int64_t cols, int64_t dim, DType dtype, bool two_blocks, int64_t parts) {
  const int64_t element = size_bytes(dtype);
  Buffers b;
  uint64_t at = 0;
  auto take = [&](int64_t bytes) {
    const uint64_t start = at;
    at = align64(at + static_cast<uint64_t>(bytes));
    return start;
  };
  b.q = take(rows * dim * element);
  for (int i = 0; i < 2; ++i) b.k[i] = take(cols * dim * element);
  for (int i = 0; i < 2; ++i) b.v[i] = take(cols * dim * element);
  for (int i = 0; i < 2; ++i) b.s[i] = take(rows * cols * 4);
  for (int i = 0; i < 2; ++i) b.p[i] = take(rows * cols * element);
  b.accumulator = take(parts * rows * dim * 4);
  b.out = take(rows * dim * element);
  b.statistics = take(parts * rows * arch::VecOp::kRowStatistics * 4);
  if (two_blocks) {
    b.q2 = take(rows * dim * element);
    b.accumulator2 = take(rows * dim * 4);
    b.out2 = take(rows * dim * element);
    b.statistics2 = take(rows * arch::VecOp::kRowStatistics * 4);
  }
  b.end = at;
  return b;
}

std::vector<Run> kv_runs(const ops::AttentionShape& a, const std::vector<int32_t>& table, int64_t b,
                         int64_t g, int64_t k0, int64_t cols) {
  const bool bshd = a.kv_cache.order == ops::KvOrder::bshd;
  std::vector<Run> runs;
  for (int64_t key = k0; key < k0 + cols; ++key) {
    const int64_t flat = a.kv_row(b, g, key, table.empty() ? nullptr : table.data());
    const int64_t row = bshd ? flat / a.kv_heads : flat, col = bshd ? (flat % a.kv_heads) * a.head_dim : 0;
    if (!runs.empty() && runs.back().col == col && runs.back().row + runs.back().rows == row) {
      ++runs.back().rows;
    } else {
      runs.push_back(Run{row, 1, col, key - k0});
    }
  }
  return runs;
}

ProgramTensors start_attention_program(arch::Program& program, const std::string& name, const ops::Op& op,
                                       uint64_t seed, const arch::ArchSpec& spec,
                                       const ops::AttentionShape& a) {
  start_program(program, name, op, seed, spec);
  ProgramTensors tensors;
  for (const ops::TensorDesc& desc : ops::tensors_of(op)) {
    if (desc.name == "BT") {
      const ops::HostTensor bt =
          ops::generate_input(DType::int32, desc.rows, desc.cols, seed, desc.tensor_id);
      tensors.table.assign(reinterpret_cast<const int32_t*>(bt.bytes.data()),
                           reinterpret_cast<const int32_t*>(bt.bytes.data()) + desc.rows * desc.cols);
      continue;
    }
    arch::TensorDecl declared = declared_tensor(desc, seed);
    if ((desc.name == "K" || desc.name == "V") && a.kv_cache.order == ops::KvOrder::bshd) {
      declared.rows /= a.kv_heads;
      declared.cols *= a.kv_heads;
    }
    const int index = add_tensor(program, declared);
    (desc.name == "Q"   ? tensors.q
     : desc.name == "K" ? tensors.k
     : desc.name == "V" ? tensors.v
                        : tensors.o) = index;
  }
  return tensors;
}

int64_t dma_cycles(const arch::ArchSpec& spec, int64_t bytes, int64_t descriptors) {
  return descriptors * int64_t{spec.core.dma.setup_cycles} +
         static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / spec.core.dma.bytes_per_cycle));
}

int64_t vector_cycles(const arch::ArchSpec& spec, arch::VectorKind kind, int64_t rows, int64_t cols,
                      int64_t extra) {
  arch::VectorWork work;
  work.kind = kind;
  work.rows = rows;
  work.cols = cols;
  work.softmax_extra_simple_ops = extra;
  return arch::vector_timing(*spec.core.vector, work).cycles;
}

void append_tile_loads(std::vector<arch::Instruction>& list, arch::Program& program, arch::QueueId queue,
                       const ProgramTensors& tensors, const Buffers& buffers, int buffer,
                       const std::vector<Run>& runs, int64_t d, int64_t element, int frees,
                       const std::vector<int>& destinations) {
  for (const bool is_k : {true, false}) {
    const char* name = is_k ? "k" : "v";
    auto semaphore = [&](const char* what) {
      return arch::SemaphoreRef{program.semaphore_id(fmt::format("{}_{}[{}]", name, what, buffer)),
                                arch::kSameCore};
    };
    for (size_t r = 0; r < runs.size(); ++r) {
      arch::DmaLoad load;
      load.source =
          arch::TensorRegion{is_k ? tensors.k : tensors.v, runs[r].row, runs[r].rows, runs[r].col, d};
      load.sram_address = (is_k ? buffers.k[buffer] : buffers.v[buffer]) +
                          static_cast<uint64_t>(runs[r].first_key * d * element);
      load.destinations = destinations;
      std::vector<arch::SemaphoreWait> waits;
      if (r == 0 && frees > 0) waits.push_back(arch::SemaphoreWait{semaphore("free"), frees});
      // The tile is full when its last run lands: the runs' signals are counted by the consumer.
      list.push_back(make_instruction(queue, load, waits, {semaphore("full")}));
    }
  }
}

}  // namespace tessera::mapper::attention
