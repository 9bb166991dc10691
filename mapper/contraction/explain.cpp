// Why a contraction mapping loses (Form::why_loses): which resource bounds it and how far it is from the
// winner there ("2.1x DRAM traffic on W", "62% of its PE time is fill and drain").
#include "mapper/contraction/stage.hpp"
#include "mapper/cost.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::mapper {

namespace {
double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}
const char* tensor_name(int tensor) {
  return tensor == kA ? "A" : tensor == kW ? "W" : "O";
}
}  // namespace

std::string ContractionStage::why_loses(const Mapping& loser, const Cost& loser_cost, int64_t loser_cycles,
                                        const Mapping& winner, const Cost& winner_cost,
                                        int64_t winner_cycles) const {
  if (!winner.form_if<ContractionStage>())
    return Form::why_loses(loser, loser_cost, loser_cycles, winner, winner_cost, winner_cycles);
  const ContractionShape& problem = shape();
  const std::string head = fmt::format("{:.2f}x the cycles", ratio(loser_cycles, winner_cycles));
  if (loser.epilogue && winner.epilogue && loser.fusion != winner.fusion && winner.fusion == Fusion::array)
    return fmt::format("{}; the winner's epilogue runs in the PE array's output path, in no time of its own",
                       head);
  if (loser.epilogue && winner.epilogue && loser.fusion != winner.fusion) {
    if (loser.fusion == Fusion::unfused)
      return fmt::format(
          "{}; unfused: its epilogue pass writes the output, re-reads it with its operands and writes it "
          "again "
          "({:.2f} MB of DRAM traffic where the fused winner's epilogue moves {:.2f} MB), after a barrier, "
          "{} vector-unit cycles per core",
          head, loser_cost.epilogue_dram_bytes / 1e6 + loser_cost.dram_bytes_by_tensor[kO] / 1e6,
          winner_cost.epilogue_dram_bytes / 1e6, loser_cost.vector_cycles);
    const int finishing = loser.split_m * loser.split_n;
    if (loser_cost.bound == Bound::vector)
      return fmt::format(
          "{}; fused: vector-bound: the epilogue takes {} vector-unit cycles on each of the {} cores that "
          "finish output tiles, the PE array {}, where the unfused pass spreads it over {} cores ({} cycles "
          "each)",
          head, loser_cost.vector_cycles, finishing, loser_cost.compute_cycles,
          winner.epilogue_pass ? winner.epilogue_pass->split_m : 0, winner_cost.vector_cycles);
    if (loser.split_k == 1 && winner.split_k > 1)
      return fmt::format(
          "{}; fused: its output tiles must each be finished once on one core, which rules out the winner's "
          "k split over {} cores",
          head, winner.split_m * winner.split_n * winner.split_k);
  }
  switch (loser_cost.bound) {
    case Bound::dram: {
      int worst = kA;
      for (int tensor : {kW, kO})
        if (ratio(loser_cost.dram_bytes_by_tensor[tensor], winner_cost.dram_bytes_by_tensor[tensor]) >
            ratio(loser_cost.dram_bytes_by_tensor[worst], winner_cost.dram_bytes_by_tensor[worst]))
          worst = tensor;
      return fmt::format(
          "{}; DRAM-bound with {:.1f}x DRAM traffic on {} ({:.2f} MB vs {:.2f} MB; {:.2f} MB in all)", head,
          ratio(loser_cost.dram_bytes_by_tensor[worst], winner_cost.dram_bytes_by_tensor[worst]),
          tensor_name(worst), loser_cost.dram_bytes_by_tensor[worst] / 1e6,
          winner_cost.dram_bytes_by_tensor[worst] / 1e6, loser_cost.dram_bytes / 1e6);
    }
    case Bound::compute: {
      const double fill = 1.0 - ratio(loser_cost.stream_cycles, loser_cost.compute_cycles);
      const double winner_fill = 1.0 - ratio(winner_cost.stream_cycles, winner_cost.compute_cycles);
      const int loser_cores = loser.split_m * loser.split_n * loser.split_k;
      const int winner_cores = winner.split_m * winner.split_n * winner.split_k;
      if (fill > winner_fill + 0.1) {
        const char* stream = loser.dataflow == arch::Dataflow::ws   ? "m"
                             : loser.dataflow == arch::Dataflow::is ? "n"
                                                                    : "k";
        const int64_t stream_length = loser.dataflow == arch::Dataflow::ws ? std::min(loser.tile_m, problem.m)
                                      : loser.dataflow == arch::Dataflow::is
                                          ? std::min(loser.tile_n, problem.n)
                                          : std::min(loser.tile_k, problem.k);
        return fmt::format(
            "{}; {:.0f}% of its PE-array time is preload, fill and drain ({} streams only {}={} per fold; "
            "the "
            "winner loses {:.0f}%)",
            head, 100 * fill, arch::name_of(loser.dataflow), stream, stream_length, 100 * winner_fill);
      }
      if (loser_cost.edge_waste > winner_cost.edge_waste + 0.05) {
        return fmt::format("{}; {:.0f}% of its PE slots idle on ragged edge folds (winner {:.0f}%)", head,
                           100 * loser_cost.edge_waste, 100 * winner_cost.edge_waste);
      }
      if (loser_cores < winner_cores) {
        return fmt::format("{}; compute-bound on {} cores where the winner uses {}", head, loser_cores,
                           winner_cores);
      }
      return fmt::format("{}; compute-bound: {:.2f}x the winner's PE-array cycles on the busiest core", head,
                         ratio(loser_cost.compute_cycles, winner_cost.compute_cycles));
    }
    case Bound::dma:
      return fmt::format("{}; its DMA engines are the bottleneck ({:.2f}x the winner's DMA time per core)",
                         head, ratio(loser_cost.dma_cycles, winner_cost.dma_cycles));
    case Bound::noc:
      return fmt::format("{}; NoC-bound: {:.2f}x the winner's traffic through a core's port{}", head,
                         ratio(loser_cost.noc_cycles, winner_cost.noc_cycles),
                         loser_cost.reduction_bytes > 0 ? " (k-split partial sums)" : "");
    case Bound::sram:
      return fmt::format("{}; SRAM-bandwidth-bound: {:.2f}x the winner's bank traffic", head,
                         ratio(loser_cost.sram_cycles, winner_cost.sram_cycles));
    case Bound::vector:
      return fmt::format(
          "{}; vector-bound: the epilogue takes {} vector-unit cycles per core, the PE array {}", head,
          loser_cost.vector_cycles, loser_cost.compute_cycles);
  }
  return head;
}

}  // namespace tessera::mapper
