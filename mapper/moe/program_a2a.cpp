// The MoE layer's all-to-all placement lowered (mapper/moe/stage.hpp): tokens sent to their experts' cores
// over the NoC and back.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "arch/isa/noc_send.hpp"
#include "arch/isa/vec_op.hpp"
#include "common/integer_math.hpp"
#include "mapper/kit/dma_engines.hpp"
#include "mapper/kit/program_builder.hpp"
#include "mapper/kit/program_header.hpp"
#include "mapper/moe/plan.hpp"
#include "mapper/moe/program_kit.hpp"
#include "mapper/moe/stage.hpp"
#include "ops/tensor.hpp"

namespace tessera::mapper {

using namespace moe;  // NOLINT: the plan's types

arch::Program MoeStage::lower_a2a(const ops::Op& op, uint64_t seed, const Mapping& mapping,
                                  const arch::ArchSpec& spec, const std::string& program_name) const {
  const ops::MoeShape& s = shape_;
  const std::shared_ptr<const ops::MoeRouting> routing = routing_of(op, seed);
  const int cores = spec.mesh.rows * spec.mesh.cols;
  const A2aPlan plan = a2a_plan(*this, *routing, cores);
  const Choice& choice = choice_of(mapping);
  const int64_t tf = choice.tile_n, tk = choice.tile_k;
  const int64_t e = size_bytes(dtype_), row_bytes = s.hidden * e, hb = plan.home_tokens;
  const int nw = s.swiglu() ? 2 : 1;
  arch::Program program;
  arch::TensorDecl output;
  const Tensors t = start_moe_program(program, program_name, op, seed, spec, *routing, output);
  const int o_tensor = add_tensor(program, output);
  std::vector<A2aLayout> layouts;
  for (int c = 0; c < cores; ++c) {
    layouts.push_back(a2a_layout(*this, plan, c, tf, tk));
    if (layouts.back().end > spec.core.sram.bytes)
      throw InputError(
          op.where, op.name,
          fmt::format("{}: the all-to-all form's rows on core {} need {} KiB of SRAM, the core has {} "
                      "KiB (the form was sized for another layer's routing)",
                      op.name, c, ceil_div(layouts.back().end, 1024), spec.core.sram.bytes / 1024),
          "map this layer alone, or choose the ep or ep-split form (--dataflow does not)");
  }
  // Each route's row on its expert's core: (core, row index).
  std::vector<std::pair<int, int64_t>> placed(static_cast<size_t>(s.tokens * s.top_k), {-1, 0});
  for (int c = 0; c < cores; ++c) {
    const auto& rows = plan.cores[static_cast<size_t>(c)].rows;
    for (size_t i = 0; i < rows.size(); ++i)
      placed[static_cast<size_t>(rows[i].token * s.top_k + rows[i].slot)] = {c, static_cast<int64_t>(i)};
  }
  // Loads cut into row blocks dealt round the load engines (the weights' chunks, the rows), the output rows
  // round the store engines; a buffer's free signalled to each engine of its next load.
  const PassEngines engines = a2a_engines(spec, hb);
  const arch::DmaSpec& dma = spec.core.dma;
  const arch::QueueId pe{arch::QueueKind::pe, 0}, vec{arch::QueueKind::vec, 0}, noc{arch::QueueKind::noc, 0};
  auto dma_queue = [](int engine) { return arch::QueueId{arch::QueueKind::dma, engine}; };
  auto ref = [&](const std::string& name, int core) {
    return arch::SemaphoreRef{program.semaphore_id("a_" + name), core};
  };
  auto here = [&](const std::string& name) { return ref(name, arch::kSameCore); };
  auto wait = [&](const std::string& name, int count = 1) { return arch::SemaphoreWait{here(name), count}; };
  auto on = [&](const char* name, int index, const EngineGroup& group, int engine) {
    return here(engine_semaphore(name, fmt::format("[{}]", index), group, engine));
  };
  // A buffer's free: to each engine of the next load into it (none left: the first engine's, unwaited).
  auto free_signals = [&](const char* name, int index, const std::vector<std::vector<DealtBlock>>& loads,
                          size_t next, arch::Signals& signals) {
    const std::vector<int> next_engines =
        next < loads.size() ? engines_of(loads[next]) : std::vector<int>{engines.loads.first};
    for (int engine : next_engines) signals.push_back(on(name, index, engines.loads, engine));
  };
  auto copy_op = [&](uint64_t from, uint64_t to, int64_t rows, int64_t cols, DType in, int64_t x_pitch) {
    arch::VecOp op;
    op.kind = arch::VectorKind::map;
    op.chain = {arch::VecFn::scale};
    op.dtype = in;
    op.out_dtype = dtype_;
    op.x_address = from;
    op.o_address = to;
    op.rows = rows;
    op.cols = cols;
    op.x_pitch_bytes = x_pitch;
    return op;
  };
  std::vector<std::vector<arch::Instruction>> lists(static_cast<size_t>(cores));
  for (int c = 0; c < cores; ++c) {
    auto& list = lists[static_cast<size_t>(c)];
    const A2aLayout& at = layouts[static_cast<size_t>(c)];
    const A2aPlan::Core& core = plan.cores[static_cast<size_t>(c)];
    const int64_t t0 = c * hb, tokens = c < plan.homes ? std::min(hb, s.tokens - t0) : 0;
    // The weights' chunks in the order the core numbers them (expert, ffn chunk, contraction chunk; expert,
    // ffn chunk, hidden tile), each stream dealt round the load engines on its own, as the rows are.
    std::vector<std::vector<DealtBlock>> w_blocks, wd_blocks;
    {
      EngineDealer w_dealer(engines.loads, dma), wd_dealer(engines.loads, dma);
      for (size_t x = 0; x < core.experts.size(); ++x)
        for (int64_t f = 0; f < s.ffn; f += tf) {
          const int64_t n = std::min(tf, s.ffn - f);
          for (int64_t k0 = 0; k0 < s.hidden; k0 += tk) {
            std::vector<DealtBlock> blocks;
            for (int w = 0; w < nw; ++w) {
              const std::vector<DealtBlock> part = w_dealer.deal(std::min(tk, s.hidden - k0), n * e);
              blocks.insert(blocks.end(), part.begin(), part.end());
            }
            w_blocks.push_back(std::move(blocks));
          }
          for (int64_t h = 0; h < s.hidden; h += tf)
            wd_blocks.push_back(wd_dealer.deal(n, std::min(tf, s.hidden - h) * e));
        }
    }
    EngineDealer rows_dealer(engines.loads, dma);
    int g_stores = 0;
    // Home: its tokens' X rows, their routing (G stored), and each route's row sent to its expert's core.
    if (tokens > 0) {
      const std::vector<DealtBlock> xh_blocks = rows_dealer.deal(tokens, row_bytes);
      for (const DealtBlock& block : xh_blocks) {
        arch::DmaLoad xh;
        xh.source = arch::TensorRegion{t.x, t0 + block.rows.first, block.rows.rows, 0, s.hidden};
        xh.sram_address = at.xh + static_cast<uint64_t>(block.rows.first * row_bytes);
        list.push_back(make_instruction(dma_queue(block.engine), xh, {}, {here("xh_full")}));
      }
      TileJob job;
      job.m = tokens, job.n = s.experts, job.k = s.hidden, job.chunk = tk;
      job.a = moe::Operand{t.x, t0, 0, false};
      job.w.push_back(moe::Operand{t.wr, 0, 0, false});
      job.epilogue = Epilogue::route;
      job.route_row = t0;
      job.out = arch::TensorRegion{t.g, t0, tokens, 0, s.top_k};
      std::vector<size_t> stores;
      JobEmitter(program, list, *this, mapping.dataflow, spec, engines, "ar_")
          .emit({job}, at.router, t.r, stores);
      g_stores = static_cast<int>(stores.size());
      for (size_t i : stores) list[i].signals.push_back(here("g_stored"));
      bool first = true;
      for (int64_t token = t0; token < t0 + tokens; ++token)
        for (int64_t j = 0; j < s.top_k; ++j) {
          const auto [to, row] = placed[static_cast<size_t>(token * s.top_k + j)];
          const uint64_t slot = layouts[static_cast<size_t>(to)].xr + static_cast<uint64_t>(row * row_bytes);
          if (to == c) continue;  // loaded from DRAM by this core as its expert's row, below
          arch::NocSend send;
          send.source_address = at.xh + static_cast<uint64_t>((token - t0) * row_bytes);
          send.rows = 1;
          send.row_bytes = row_bytes;
          send.destination_core = to;
          send.destination_address = slot;
          arch::Waits waits;
          if (first) waits.push_back(wait("xh_full", static_cast<int>(xh_blocks.size())));
          first = false;
          list.push_back(make_instruction(noc, send, waits, {ref("x_in", to)}));
        }
    }
    // Expert: its rows (those of its own tokens from DRAM), then each expert a fused FFN over ffn chunks.
    for (size_t i = 0; i < core.rows.size(); ++i)
      if (plan.home_of(core.rows[i].token) == c) {
        arch::DmaLoad x;
        x.source = arch::TensorRegion{t.x, core.rows[i].token, 1, 0, s.hidden};
        x.sram_address = at.xr + static_cast<uint64_t>(static_cast<int64_t>(i) * row_bytes);
        list.push_back(make_instruction(dma_queue(rows_dealer.deal(1, row_bytes).front().engine), x, {},
                                        {here("x_in")}));
      }
    int64_t chunks = 0, downs = 0, hs = 0;
    bool first_matmul = true;
    for (size_t x = 0; x < core.experts.size(); ++x) {
      const A2aPlan::Expert& expert = core.experts[x];
      const int64_t r = expert.rows;
      const uint64_t a_rows = at.xr + static_cast<uint64_t>(expert.first * row_bytes);
      const int64_t first_chunk = hs, ffn_chunks = ceil_div(s.ffn, tf);
      // Chunk j of the expert's ffn (its H chunk and its accumulators: parity of the core's chunk count).
      auto gate_up = [&](int64_t j) {
        const int64_t f = j * tf, n = std::min(tf, s.ffn - f), chunk = first_chunk + j;
        const int p = static_cast<int>(chunk % 2);
        for (int64_t k0 = 0; k0 < s.hidden; k0 += tk, ++chunks) {
          const int64_t k = std::min(tk, s.hidden - k0);
          const int cb = static_cast<int>(chunks % 2);
          const std::vector<DealtBlock>& blocks = w_blocks[static_cast<size_t>(chunks)];
          std::vector<int> waited;
          for (size_t piece = 0; piece < blocks.size(); ++piece) {
            // The W tensors' blocks one after another: tensor w's are the w-th share of them.
            const int w = static_cast<int>(piece * static_cast<size_t>(nw) / blocks.size());
            const DealtBlock& block = blocks[piece];
            arch::DmaLoad l;
            l.source =
                arch::TensorRegion{w == 0 && nw == 2 ? t.wg : t.wu,
                                   expert.expert * s.hidden + k0 + block.rows.first, block.rows.rows, f, n};
            l.sram_address = at.w[cb][w] + static_cast<uint64_t>(block.rows.first * n * e);
            arch::Waits waits;
            if (chunks >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
              waits.push_back(arch::SemaphoreWait{on("w_free", cb, engines.loads, block.engine), 1});
              waited.push_back(block.engine);
            }
            list.push_back(
                make_instruction(dma_queue(block.engine), l, waits, {here(fmt::format("w_full[{}]", cb))}));
          }
          for (int w = 0; w < nw; ++w) {
            arch::PeMatmul mm;
            mm.dataflow = mapping.dataflow;
            mm.dtype = dtype_;
            mm.a_address = a_rows + static_cast<uint64_t>(k0 * e);
            mm.a_pitch_bytes = row_bytes;
            mm.w_address = at.w[cb][w];
            mm.o_address = at.acc[p][w];
            mm.m = r, mm.n = n, mm.k = k;
            mm.accumulate = k0 > 0;
            arch::Waits waits;
            if (w == 0) {
              waits.push_back(
                  arch::SemaphoreWait{here(fmt::format("w_full[{}]", cb)), static_cast<int>(blocks.size())});
              if (first_matmul) waits.push_back(wait("x_in", static_cast<int>(core.rows.size())));
              if (k0 == 0 && chunk >= 2) waits.push_back(wait(fmt::format("acc_free[{}]", p)));
            }
            first_matmul = false;
            arch::Signals signals;
            if (w == nw - 1) {
              free_signals("w_free", cb, w_blocks, static_cast<size_t>(chunks + 2), signals);
              if (k0 + k >= s.hidden) signals.push_back(here(fmt::format("acc_full[{}]", p)));
            }
            list.push_back(make_instruction(pe, mm, waits, signals));
          }
        }
        // H chunk = act(gate) * up, in the op's type.
        arch::VecOp act;
        act.kind = arch::VectorKind::map;
        act.dtype = DType::fp32;
        act.out_dtype = dtype_;
        act.x_address = at.acc[p][0];
        act.o_address = at.h[p];
        act.rows = r, act.cols = n;
        if (s.swiglu()) {
          act.chain = {arch::VecFn::swiglu};
          act.y_address = at.acc[p][1];
        } else {
          act.chain = {arch::VecFn::gelu};
        }
        arch::Waits act_waits = {wait(fmt::format("acc_full[{}]", p))};
        if (chunk >= 2) act_waits.push_back(wait(fmt::format("h_free[{}]", p)));
        list.push_back(make_instruction(
            vec, act, act_waits, {here(fmt::format("acc_free[{}]", p)), here(fmt::format("h_full[{}]", p))}));
      };
      // The H chunk's part of every hidden tile of Y.
      auto down = [&](int64_t j) {
        const int64_t f = j * tf, n = std::min(tf, s.ffn - f), chunk = first_chunk + j;
        const int p = static_cast<int>(chunk % 2);
        for (int64_t h = 0; h < s.hidden; h += tf, ++downs) {
          const int64_t cols = std::min(tf, s.hidden - h);
          const int db = static_cast<int>(downs % 2);
          const std::vector<DealtBlock>& blocks = wd_blocks[static_cast<size_t>(downs)];
          std::vector<int> waited;
          for (const DealtBlock& block : blocks) {
            arch::DmaLoad l;
            l.source = arch::TensorRegion{t.wd, expert.expert * s.ffn + f + block.rows.first, block.rows.rows,
                                          h, cols};
            l.sram_address = at.wd[db] + static_cast<uint64_t>(block.rows.first * cols * e);
            arch::Waits waits;
            if (downs >= 2 && std::find(waited.begin(), waited.end(), block.engine) == waited.end()) {
              waits.push_back(arch::SemaphoreWait{on("wd_free", db, engines.loads, block.engine), 1});
              waited.push_back(block.engine);
            }
            list.push_back(
                make_instruction(dma_queue(block.engine), l, waits, {here(fmt::format("wd_full[{}]", db))}));
          }
          arch::PeMatmul mm;
          mm.dataflow = mapping.dataflow;
          mm.dtype = dtype_;
          mm.a_address = at.h[p];
          mm.w_address = at.wd[db];
          mm.o_address = at.yacc + static_cast<uint64_t>(h * 4);
          mm.o_pitch_bytes = s.hidden * 4;
          mm.m = r, mm.n = cols, mm.k = n;
          mm.accumulate = f > 0;
          arch::Waits waits2 = {wait(fmt::format("wd_full[{}]", db), static_cast<int>(blocks.size()))};
          if (h == 0) waits2.push_back(wait(fmt::format("h_full[{}]", p)));
          if (f == 0 && h == 0 && x > 0) waits2.push_back(wait("yacc_free"));
          arch::Signals signals;
          free_signals("wd_free", db, wd_blocks, static_cast<size_t>(downs + 2), signals);
          if (h + cols >= s.hidden) signals.push_back(here(fmt::format("h_free[{}]", p)));
          if (h + cols >= s.hidden && f + n >= s.ffn) signals.push_back(here("y_done"));
          list.push_back(make_instruction(pe, mm, waits2, signals));
        }
      };
      // Software-pipelined: chunk j + 1's gate/up GEMMs run on the PE array while the vector unit activates
      // chunk j, then chunk j's down GEMMs.
      gate_up(0);
      for (int64_t j = 0; j < ffn_chunks; ++j) {
        if (j + 1 < ffn_chunks) gate_up(j + 1);
        down(j);
      }
      hs += ffn_chunks;
      // Y rounded to the op's type beside the expert's rows, then each row to its slot on its home core.
      bool remote = false, local = false;
      for (int64_t i = 0; i < r; ++i)
        (plan.home_of(core.rows[static_cast<size_t>(expert.first + i)].token) == c ? local : remote) = true;
      arch::Signals rounded = {here("yacc_free")};
      if (remote) rounded.push_back(here("y_noc"));
      if (local) rounded.push_back(here("y_vec"));
      list.push_back(
          make_instruction(vec,
                           copy_op(at.yacc, at.yb + static_cast<uint64_t>(expert.first * row_bytes), r,
                                   s.hidden, DType::fp32, 0),
                           {wait("y_done")}, rounded));
      bool first_send = true, first_copy = true;
      for (int64_t i = 0; i < r; ++i) {
        const A2aPlan::Row& row = core.rows[static_cast<size_t>(expert.first + i)];
        const int home = plan.home_of(row.token);
        const uint64_t from = at.yb + static_cast<uint64_t>((expert.first + i) * row_bytes);
        const uint64_t slot =
            layouts[static_cast<size_t>(home)].slots +
            static_cast<uint64_t>(((row.token - home * hb) * s.top_k + row.slot) * row_bytes);
        if (home != c) {
          arch::NocSend send;
          send.source_address = from;
          send.rows = 1;
          send.row_bytes = row_bytes;
          send.destination_core = home;
          send.destination_address = slot;
          arch::Waits waits;
          if (first_send) waits.push_back(wait("y_noc"));
          first_send = false;
          list.push_back(make_instruction(noc, send, waits, {ref("y_in", home)}));
        } else {
          arch::Waits waits;
          if (first_copy) waits.push_back(wait("y_vec"));
          first_copy = false;
          list.push_back(
              make_instruction(vec, copy_op(from, slot, 1, s.hidden, dtype_, 0), waits, {here("y_in")}));
        }
      }
    }
    // Home: the combine, once every route's row is in its slot.
    if (tokens > 0) {
      // G, a few bytes a token: whole, on the first load engine.
      arch::DmaLoad g;
      g.source = arch::TensorRegion{t.g, t0, tokens, 0, s.top_k};
      g.sram_address = at.g;
      list.push_back(make_instruction(dma_queue(engines.loads.first), g, {wait("g_stored", g_stores)},
                                      {here("g_full")}));
      arch::VecOp sum;
      sum.kind = arch::VectorKind::weighted_sum;
      sum.dtype = dtype_;
      sum.out_dtype = dtype_;
      sum.x_address = at.slots;
      sum.g_address = at.g;
      sum.o_address = at.out;
      sum.rows = tokens;
      sum.cols = s.hidden;
      sum.parts = s.top_k;
      const std::vector<DealtBlock> out_blocks = EngineDealer(engines.stores, dma).deal(tokens, row_bytes);
      arch::Signals full;
      for (int engine : engines_of(out_blocks))
        full.push_back(here(engine_semaphore("out_full", "", engines.stores, engine)));
      list.push_back(make_instruction(
          vec, sum, {wait("g_full"), wait("y_in", static_cast<int>(tokens * s.top_k))}, full));
      for (const DealtBlock& block : out_blocks) {
        arch::DmaStore o;
        o.sram_address = at.out + static_cast<uint64_t>(block.rows.first * row_bytes);
        o.destination = arch::TensorRegion{o_tensor, t0 + block.rows.first, block.rows.rows, 0, s.hidden};
        list.push_back(
            make_instruction(dma_queue(block.engine), o,
                             {wait(engine_semaphore("out_full", "", engines.stores, block.engine))}, {}));
      }
    }
  }
  finish_program(program, lists, spec);
  return program;
}

}  // namespace tessera::mapper
