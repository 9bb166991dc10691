#include "traces/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <variant>

#include "traces/run_stats.hpp"
#include "traces/text_format.hpp"

namespace tessera::traces {

namespace {

using Json = nlohmann::ordered_json;

// nlohmann writes non-finite doubles as null; an infinite error (a NaN in the output) must stay visible.
Json number(double value) {
  return std::isfinite(value) ? Json(value) : Json(value > 0 ? "inf" : "nan");
}

Json mapping_json(const MappingSummary& mapping) {
  Json json;
  json["dataflow"] = mapping.dataflow;
  for (const NamedValue& field : mapping.fields) {
    // "tile.m": key m of the object at key tile.
    Json* at = &json;
    size_t start = 0;
    for (size_t dot = field.name.find('.'); dot != std::string::npos; dot = field.name.find('.', start)) {
      at = &(*at)[field.name.substr(start, dot - start)];
      start = dot + 1;
    }
    std::visit([&](const auto& value) { (*at)[field.name.substr(start)] = value; }, field.value);
  }
  json["description"] = mapping.description;
  return json;
}

// Bubbles summed over the units of each kind (pe, dma, noc), causes in order.
std::vector<std::pair<std::string, std::vector<std::pair<std::string, int64_t>>>> by_kind(
    const std::vector<UnitBubbles>& bubbles) {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, int64_t>>>> kinds;
  for (const UnitBubbles& unit : bubbles) {
    auto found =
        std::find_if(kinds.begin(), kinds.end(), [&](const auto& kind) { return kind.first == unit.kind; });
    if (found == kinds.end()) {
      kinds.emplace_back(unit.kind, unit.cycles);
      continue;
    }
    for (size_t i = 0; i < unit.cycles.size(); ++i) found->second[i].second += unit.cycles[i].second;
  }
  return kinds;
}

Json run_json(const RunRecord& run) {
  Json json;
  json["dataflow"] = run.dataflow;
  json["winner"] = run.winner;
  for (const RunFigure& figure : run_figures())
    with_value(run, figure, [&](const auto& value) { json[figure.key] = value; });
  json["mapping"] = mapping_json(run.mapping);
  Json numerics = Json::array();
  for (const Numerics& check : run.numerics) {
    numerics.push_back({{"reference", check.reference},
                        {"max_abs_err", number(check.max_abs_err)},
                        {"rel_l2_err", number(check.rel_l2_err)},
                        {"tolerance", check.exact ? Json("exact") : Json(check.tolerance_rel_l2)},
                        {"pass", check.pass}});
  }
  json["numerics"] = numerics;
  Json kinds = Json::object();
  for (const auto& [kind, cycles] : by_kind(run.bubbles)) {
    Json causes = Json::object();
    for (const auto& [cause, value] : cycles) causes[cause] = value;
    kinds[kind] = causes;
  }
  json["bubbles_by_kind"] = kinds;
  Json units = Json::object();
  for (const UnitBubbles& unit : run.bubbles) {
    Json causes = Json::object();
    for (const auto& [cause, value] : unit.cycles) causes[cause] = value;
    units[unit.unit] = causes;
  }
  json["bubbles"] = units;
  Json counters = Json::object();
  for (const UnitBubbles& unit : run.bubbles) {
    Json values = Json::object();
    for (const CounterDecl<UnitCounters>& counter : unit_counters())
      if (const int64_t value = unit.counters.*counter.member; value != 0) values[counter.name] = value;
    if (!values.empty()) counters[unit.unit] = values;
  }
  json["unit_counters"] = counters;
  if (const CoreLoads loads = core_loads(run, run.counters.cycles); !loads.cores.empty()) {
    Json per_core = Json::array();
    for (const CoreLoad& core : loads.cores)
      per_core.push_back({{"core", core.core}, {"pe_busy_cycles", core.pe_busy}, {"done_cycles", core.done}});
    json["core_load"] = {{"straggler", loads.cores[loads.straggler].core},
                         {"imbalance_cycles", loads.imbalance_cycles},
                         {"cores", per_core}};
  }
  if (!run.program_file.empty()) json["program"] = run.program_file;
  if (!run.loses_because.empty()) json["loses_because"] = run.loses_because;
  return json;
}

// The recorded GPU run and the simulated winner of the same op side by side: DRAM bytes (the GPU's as Nsight
// Compute counted them, where the record has a profile), tensor-pipe against PE utilisation, and where each
// sits on its machine's roofline.
struct SideBySide {
  RooflinePosition gpu, simulated;
  bool gpu_bytes_counted = false;  // the GPU's intensity from ncu's DRAM bytes, else from the fewest bytes
};

SideBySide side_by_side(const GpuComparison& gpu, const RunRecord& best, const Report& report) {
  SideBySide both;
  const double flops = gpu.tflops * gpu.time_us * 1e6;
  both.gpu_bytes_counted = gpu.profiled && gpu.gpu_dram_bytes > 0;
  both.gpu = roofline_position(flops, both.gpu_bytes_counted ? gpu.gpu_dram_bytes : gpu.fewest_bytes,
                               gpu.time_us * 1e-6, gpu.peak_tflops, gpu.bandwidth_gbps);
  both.simulated =
      roofline_position(2.0 * static_cast<double>(best.macs), static_cast<double>(best.dram_bytes),
                        best.time_us * 1e-6, report.peak_tflops, report.dram_gbps);
  return both;
}

Json position_json(const RooflinePosition& position) {
  return {{"flop_per_byte", number(position.flop_per_byte)},
          {"attained_tflops", number(position.attained_tflops)},
          {"roof_tflops", number(position.roof_tflops)},
          {"bound", position.bound}};
}

// A number figure of a run as a double (exact for every count a run reaches).
double number_of(const RunRecord& run, const RunFigure& figure) {
  double number = 0;
  with_value(run, figure, [&](const auto& value) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(value)>, std::string>)
      number = static_cast<double>(value);
  });
  return number;
}

// The table's figure columns (the run figures that have one): their headings, or `run`'s cells.
std::string figure_columns(const RunRecord* run) {
  std::string out;
  for (const RunFigure& figure : run_figures())
    if (figure.table.cell != Cell::none)
      out += fmt::format(" {:>{}}",
                         run ? table_cell(figure.table.cell, number_of(*run, figure)) : figure.table.heading,
                         figure.table.width);
  return out;
}

std::string numerics_cell(const RunRecord& run) {
  if (run.numerics.empty()) return "not run";
  std::string cell;
  for (const Numerics& check : run.numerics) {
    if (!cell.empty()) cell += "; ";
    cell += fmt::format("{} {} {:.1e}", check.reference, check.pass ? "pass" : "FAIL", check.rel_l2_err);
  }
  return cell;
}

// The PE arrays' largest bubble cause and its share of their cycles ("input_starvation 31%").
std::string top_pe_bubble(const RunRecord& run) {
  for (const auto& [kind, cycles] : by_kind(run.bubbles)) {
    if (kind != "pe") continue;
    int64_t sum = 0;
    const std::pair<std::string, int64_t>* top = nullptr;
    for (const auto& entry : cycles) {
      sum += entry.second;
      if (entry.first != "busy" && (!top || entry.second > top->second)) top = &entry;
    }
    if (top && sum > 0 && top->second > 0)
      return fmt::format("{} {:.0f}%", top->first, 100.0 * top->second / sum);
  }
  return "-";
}

// A run as tables name it: its dataflow, and fused or unfused where the op has an epilogue ("ws fused").
std::string run_label(const RunRecord& run) {
  return run.fusion.empty() ? run.dataflow : run.dataflow + " " + run.fusion;
}

// One line per op: the winner, every dataflow's cycles against it, and where the winner's PE time goes.
std::string layer_table(const Report& report) {
  size_t name_width = 4, kind_width = 6, shape_width = 5, others_width = 6, win_width = 9;
  auto others_of = [](const OpRecord& op) {
    const RunRecord& best = op.best();
    std::string others;
    for (const RunRecord& run : op.runs)
      if (!run.winner)
        others += fmt::format(
            "{}{} {:.2f}", others.empty() ? "" : " ", run_label(run),
            best.counters.cycles > 0 ? static_cast<double>(run.counters.cycles) / best.counters.cycles : 0.0);
    return others.empty() ? std::string("-") : others;
  };
  for (const OpRecord& op : report.ops) {
    name_width = std::max(name_width, op.name.size());
    kind_width = std::max(kind_width, op.kind.size());
    shape_width = std::max(shape_width, op.shape.size());
    if (op.winner >= 0) others_width = std::max(others_width, others_of(op).size());
    if (op.winner >= 0) win_width = std::max(win_width, run_label(op.best()).size());
  }
  std::string out =
      "\nper layer (the winner of each; others as cycles relative to it; PEs: the most one core used at "
      "once):\n";
  out += fmt::format(
      "  {:<{}} {:<{}} {:<{}} {:<{}} {:>12} {:>9} {:>6} {:>5} {:>9}  {:<{}}  {:<26} {:>8} {:>8} {:>8}  {}\n",
      "op", name_width, "kind", kind_width, "shape", shape_width, "win", win_width, "cycles", "time_us",
      "util", "PEs", "DRAM_MB", "others", others_width, "top PE bubble", "gpu_us", "gpu16_us", "fw_us",
      "numerics");
  // The GPU's cells of a layer: the runner's path for tessera's output type (whose output is compared), the
  // runner's path that stores what the framework stores, and the framework.
  auto gpu_cells = [](const OpRecord& op) {
    std::array<std::string, 3> cells = {"-", "-", "-"};
    const auto gpu = std::find_if(op.gpu.begin(), op.gpu.end(), [](const GpuComparison& record) {
      return record.compared && record.time_us > 0;
    });
    if (gpu == op.gpu.end()) return std::make_pair(cells, static_cast<const GpuComparison*>(nullptr));
    cells[0] = fmt::format("{:.1f}{}", gpu->time_us, gpu->contraction_only ? "*" : "");
    if (gpu->framework_us > 0) {
      cells[1] = fmt::format("{:.1f}", gpu->framework_runner_us);
      cells[2] = fmt::format("{:.1f}", gpu->framework_us);
    }
    return std::make_pair(cells, &*gpu);
  };
  // The recorded GPU beside the simulation, over the layers that have a measurement of this very op.
  double gpu_total = 0, framework_total = 0, simulated_total = 0;
  int measured = 0, with_framework = 0;
  std::string gpu_name;
  for (const OpRecord& op : report.ops) {
    if (op.winner < 0) {
      const auto [cells, gpu] = gpu_cells(op);
      if (gpu == nullptr) {
        out += fmt::format("  {:<{}} {:<{}} {:<{}} {}\n", op.name, name_width, op.kind, kind_width, op.shape,
                           shape_width, "not simulated");
      } else {
        out += fmt::format("  {:<{}} {:<{}} {:<{}} {:<{}} {:>8} {:>8} {:>8}\n", op.name, name_width, op.kind,
                           kind_width, op.shape, shape_width, "not simulated",
                           win_width + 1 + 12 + 1 + 9 + 1 + 6 + 1 + 5 + 1 + 9 + 2 + others_width + 2 + 26,
                           cells[0], cells[1], cells[2]);
      }
      continue;
    }
    const RunRecord& best = op.best();
    const std::string others = others_of(op);
    std::string numerics = "not run";
    if (!best.numerics.empty()) {
      bool pass = true;
      for (const RunRecord& run : op.runs)
        for (const Numerics& check : run.numerics) pass = pass && check.pass;
      numerics = pass ? "pass" : "FAIL";
    }
    const auto [cells, gpu] = gpu_cells(op);
    if (gpu != nullptr) {
      gpu_total += gpu->time_us, simulated_total += best.time_us, ++measured;
      gpu_name = gpu->gpu;
      if (gpu->framework_us > 0) framework_total += gpu->framework_us, ++with_framework;
    }
    out += fmt::format(
        "  {:<{}} {:<{}} {:<{}} {:<{}} {:>12} {:>9.2f} {:>5.1f}% {:>5} {:>9}  {:<{}}  {:<26} {:>8} {:>8} "
        "{:>8} "
        " {}\n",
        op.name, name_width, op.kind, kind_width, op.shape, shape_width, run_label(best), win_width,
        grouped(best.counters.cycles), best.time_us, 100 * best.pe_utilization, best.counters.active_pes,
        megabytes(best.dram_bytes), others, others_width, top_pe_bubble(best), cells[0], cells[1], cells[2],
        numerics);
  }
  if (measured > 0) {
    out += fmt::format("  {} (recorded) over the {} layers it measured: {:.1f} us by tessera's GPU runner",
                       gpu_name, measured, gpu_total);
    if (with_framework == measured) out += fmt::format(", {:.1f} us by the framework", framework_total);
    out += fmt::format("; simulated {:.1f} us\n", simulated_total);
    out +=
        "  gpu_us: the runner's path for tessera's output type (its output is compared); gpu16_us: its path "
        "storing what the framework stores; fw_us: the framework's; *: the contraction alone (recorded "
        "without its epilogue)\n";
  }
  return out;
}

}  // namespace

RooflinePosition roofline_position(double flops, double dram_bytes, double seconds, double peak_tflops,
                                   double bandwidth_gbps) {
  RooflinePosition position;
  if (flops <= 0 || dram_bytes <= 0 || seconds <= 0) return position;
  position.flop_per_byte = flops / dram_bytes;
  position.attained_tflops = flops / seconds / 1e12;
  const double memory_roof = position.flop_per_byte * bandwidth_gbps / 1e3;
  position.roof_tflops = std::min(peak_tflops, memory_roof);
  position.bound = memory_roof < peak_tflops ? "memory" : "compute";
  return position;
}

std::string explain_gap(const RunRecord& loser, const RunRecord& winner) {
  // Per-PE-array share of each cause, loser and winner.
  auto shares = [](const RunRecord& run) {
    std::vector<std::pair<std::string, double>> result;
    for (const auto& [kind, cycles] : by_kind(run.bubbles)) {
      if (kind != "pe") continue;
      int64_t total = 0;
      for (const auto& entry : cycles) total += entry.second;
      for (const auto& [cause, value] : cycles)
        result.emplace_back(cause, total > 0 ? static_cast<double>(value) / static_cast<double>(total) : 0.0);
    }
    return result;
  };
  static const std::vector<std::pair<std::string, std::string>> kWhat = {
      {"input_starvation", "wait for DMA loads"},
      {"output_backpressure", "wait for stores to free a buffer"},
      {"noc", "wait for core-to-core transfers"},
      {"bank_conflict", "are held up by SRAM bank conflicts"},
      {"sync", "wait for other units"},
      {"fill_drain", "preload, fill and drain"},
      {"vector", "wait for the vector unit"},
      {"imbalance", "sit idle after their share, waiting for other cores"}};
  const auto loser_shares = shares(loser), winner_shares = shares(winner);
  std::string worst;
  double worst_excess = 0, loser_share = 0, winner_share = 0;
  for (size_t i = 0; i < loser_shares.size() && i < winner_shares.size(); ++i) {
    const std::string& cause = loser_shares[i].first;
    if (cause == "busy") continue;
    // Cycles per PE array spent on this cause beyond the winner's.
    const double excess = loser_shares[i].second * static_cast<double>(loser.counters.cycles) -
                          winner_shares[i].second * static_cast<double>(winner.counters.cycles);
    if (excess > worst_excess) {
      worst_excess = excess, worst = cause;
      loser_share = loser_shares[i].second, winner_share = winner_shares[i].second;
    }
  }
  // Faster, yet not the winner: the run is judged by energy, energy x delay or DRAM bytes.
  if (loser.counters.cycles < winner.counters.cycles - winner.counters.cycles / 200)
    return fmt::format(
        "{:.2f}x the cycles (faster), {:.2f}x the energy, {:.2f}x the DRAM traffic",
        static_cast<double>(loser.counters.cycles) / static_cast<double>(winner.counters.cycles),
        winner.energy_uj > 0 ? loser.energy_uj / winner.energy_uj : 0.0,
        winner.dram_bytes > 0 ? static_cast<double>(loser.dram_bytes) / static_cast<double>(winner.dram_bytes)
                              : 0.0);
  if (std::abs(loser.counters.cycles - winner.counters.cycles) <= winner.counters.cycles / 200)
    return loser.counters.cycles >= winner.counters.cycles
               ? fmt::format("a tie: {} cycles more (within 0.5%)",
                             loser.counters.cycles - winner.counters.cycles)
               : fmt::format("a tie: {} cycles fewer (within 0.5%)",
                             winner.counters.cycles - loser.counters.cycles);
  std::string text = fmt::format(
      "{:.2f}x the cycles",
      winner.counters.cycles > 0 ? static_cast<double>(loser.counters.cycles) / winner.counters.cycles : 0.0);
  // A vector op's PE arrays have no work: their waits say nothing of why it lost.
  const bool pe_work = loser.pe_utilization > 0 || winner.pe_utilization > 0;
  for (const auto& [cause, what] : kWhat)
    if (cause == worst && pe_work)
      text += fmt::format(": its PE arrays {} {:.0f}% of the time (winner {:.0f}%)", what, 100 * loser_share,
                          100 * winner_share);
  if (winner.dram_bytes > 0 && loser.dram_bytes > 1.15 * winner.dram_bytes)
    text +=
        fmt::format("; {:.2f}x the DRAM traffic", static_cast<double>(loser.dram_bytes) / winner.dram_bytes);
  if (!loser.fusion.empty() && loser.fusion != winner.fusion)
    text += fmt::format("; {}{}: {} MB of DRAM and {} MB of SRAM traffic (the {} winner {} and {})",
                        loser.fusion, pe_work ? " epilogue" : "", megabytes(loser.dram_bytes),
                        megabytes(loser.counters.sram_read_bytes + loser.counters.sram_write_bytes),
                        winner.fusion, megabytes(winner.dram_bytes),
                        megabytes(winner.counters.sram_read_bytes + winner.counters.sram_write_bytes));
  if (loser.pe_utilization > 0 && loser.mapping.edge_waste > winner.mapping.edge_waste + 0.05)
    text +=
        fmt::format("; {:.0f}% of its PE slots idle on ragged edge folds", 100 * loser.mapping.edge_waste);
  return text;
}

FusionComparison fusion_comparison(const OpRecord& op) {
  FusionComparison comparison;
  for (const RunRecord& run : op.runs) {
    const RunRecord** slot = run.fusion == "fused"     ? &comparison.fused
                             : run.fusion == "unfused" ? &comparison.unfused
                             : run.fusion == "array"   ? &comparison.array
                                                       : nullptr;
    if (slot && (!*slot || run.counters.cycles < (*slot)->counters.cycles)) *slot = &run;
  }
  return comparison;
}

std::string FusionComparison::text() const {
  if (!available()) return "";
  auto side = [](const RunRecord& run) {
    return fmt::format("{} {} {} cycles, {} MB DRAM, {} MB SRAM traffic", run.fusion, run.dataflow,
                       grouped(run.counters.cycles), megabytes(run.dram_bytes),
                       megabytes(run.counters.sram_read_bytes + run.counters.sram_write_bytes));
  };
  const bool fused_wins = fused->counters.cycles <= unfused->counters.cycles;
  const RunRecord& faster = fused_wins ? *fused : *unfused;
  const RunRecord& slower = fused_wins ? *unfused : *fused;
  std::string text = fmt::format(
      "{} vs {}: {} is {:.2f}x faster", side(*fused), side(*unfused), faster.fusion,
      faster.counters.cycles > 0 ? static_cast<double>(slower.counters.cycles) / faster.counters.cycles
                                 : 0.0);
  if (array)
    text += fmt::format("; in the PE array's output path: {}, {:.2f}x the {}'s cycles", side(*array),
                        faster.counters.cycles > 0
                            ? static_cast<double>(array->counters.cycles) / faster.counters.cycles
                            : 0.0,
                        faster.fusion);
  return text;
}

const char* FusionComparison::winner() const {
  const RunRecord* best =
      fused && (!unfused || fused->counters.cycles <= unfused->counters.cycles) ? fused : unfused;
  if (array && (!best || array->counters.cycles < best->counters.cycles)) best = array;
  return best == array ? "array" : best == fused ? "fused" : "unfused";
}

bool Report::numerics_pass() const {
  for (const OpRecord& op : ops)
    for (const RunRecord& run : op.runs)
      for (const Numerics& check : run.numerics)
        if (!check.pass) return false;
  return true;
}

Json pareto_json(const std::vector<ParetoPoint>& front) {
  Json points = Json::array();
  for (const ParetoPoint& point : front)
    points.push_back({{"dataflow", point.mapping.dataflow},
                      {"analytical_cycles", point.cycles},
                      {"energy_uj", point.energy_uj},
                      {"dram_bytes", point.dram_bytes},
                      {"mapping", point.mapping.description}});
  return points;
}

std::string to_json(const Report& report, bool include_host_seconds) {
  Json json;
  json["tool"] = report.tool;
  json["schema_version"] = kReportSchemaVersion;
  json["command"] = report.command;
  json["machine"] = report.machine;
  json["workload"] = report.workload;
  json["clock_ghz"] = report.clock_ghz;
  json["timing_only"] = report.timing_only;
  json["objective"] = report.objective;
  json["bubble_causes"] = report.cause_names;
  Json ops = Json::array();
  int64_t cycles = 0, macs = 0, dram_bytes = 0;
  double time_us = 0, energy_uj = 0;
  for (const OpRecord& op : report.ops) {
    Json entry;
    entry["name"] = op.name;
    entry["kind"] = op.kind;
    entry["shape"] = op.shape;
    entry["dtype"] = op.dtype;
    entry["macs"] = op.macs;
    entry["dram_minimum_bytes"] = op.dram_minimum_bytes;
    entry["mapper"]["candidates"] = op.mapper_candidates;
    if (include_host_seconds) entry["mapper"]["host_seconds"] = op.mapper_seconds;
    entry["winner"] = op.winner >= 0 ? Json(op.best().dataflow) : Json();
    if (!op.not_simulated.empty()) entry["not_simulated"] = op.not_simulated;
    Json pruned = Json::array();
    for (const auto& [dataflow, ratio] : op.pruned)
      pruned.push_back({{"dataflow", dataflow}, {"estimate_vs_best", ratio}});
    entry["pruned"] = pruned;
    entry["pareto"] = pareto_json(op.pareto);
    Json runs = Json::array();
    for (const RunRecord& run : op.runs) runs.push_back(run_json(run));
    entry["runs"] = runs;
    if (const FusionComparison fusion = fusion_comparison(op); fusion.available()) {
      auto side = [](const RunRecord& run) {
        return Json{{"dataflow", run.dataflow},
                    {"cycles", run.counters.cycles},
                    {"dram_bytes", run.dram_bytes},
                    {"sram_bytes", run.counters.sram_read_bytes + run.counters.sram_write_bytes}};
      };
      entry["fusion"] = {
          {"fused", side(*fusion.fused)},
          {"unfused", side(*fusion.unfused)},
          {"winner", fusion.winner()},
          {"unfused_vs_fused_cycles", static_cast<double>(fusion.unfused->counters.cycles) /
                                          std::max<int64_t>(1, fusion.fused->counters.cycles)}};
      if (fusion.array) entry["fusion"]["array"] = side(*fusion.array);
    }
    Json gpu = Json::array();
    for (const GpuComparison& record : op.gpu) {
      Json item{
          {"gpu", record.gpu}, {"record", record.file}, {"date", record.date}, {"compared", record.compared}};
      if (!record.note.empty()) item["note"] = record.note;
      if (record.contraction_only) item["contraction_only"] = true;
      if (record.time_us > 0) {
        item["path"] = record.path;
        item["time_us"] = record.time_us;
        item["tflops"] = record.tflops;
        item["roofline_floor_us"] = record.roofline_floor_us;
        item["roofline_bound"] = record.roofline_bound;
      }
      if (record.eager_us > 0) item["eager_us"] = record.eager_us;
      if (record.framework_us > 0) {
        item["framework"] = {{"name", record.framework},
                             {"path", record.framework_path},
                             {"time_us", record.framework_us},
                             {"runner_time_us", record.framework_runner_us}};
        if (record.rounds > 0) {
          item["framework"]["variant"] = record.framework_variant;
          item["framework"]["eager_us"] = record.framework_eager_us;
          item["framework"]["ab"] = {{"rounds", record.rounds},
                                     {"runner_over_framework", record.ratio},
                                     {"min", record.ratio_min},
                                     {"max", record.ratio_max}};
        }
      }
      if (record.profiled)
        item["profile"] = {{"dram_bytes", record.gpu_dram_bytes},
                           {"tensor_pipe_pct", record.tensor_pipe_pct},
                           {"sm_throughput_pct", record.sm_throughput_pct},
                           {"achieved_occupancy_pct", record.achieved_occupancy_pct},
                           {"kernels", record.kernels}};
      if (record.compared && record.time_us > 0 && op.winner >= 0) {
        const RunRecord& best = op.best();
        const SideBySide both = side_by_side(record, best, report);
        item["vs_simulated"] = {
            {"dram_bytes",
             {{"gpu", record.profiled ? Json(record.gpu_dram_bytes) : Json(nullptr)},
              {"simulated", best.dram_bytes}}},
            {"utilization_pct",
             {{"gpu_tensor_pipe", record.profiled ? Json(record.tensor_pipe_pct) : Json(nullptr)},
              {"simulated_pe", number(100 * best.pe_utilization)}}},
            {"roofline",
             {{"gpu", position_json(both.gpu)},
              {"gpu_bytes", both.gpu_bytes_counted ? "ncu DRAM bytes" : "fewest bytes (no profile)"},
              {"simulated", position_json(both.simulated)}}}};
      }
      gpu.push_back(item);
    }
    entry["gpu_reference"] = gpu;
    if (!op.gpu_note.empty()) entry["gpu_reference_note"] = op.gpu_note;
    ops.push_back(entry);
    if (op.winner >= 0) {
      const RunRecord& best = op.best();
      cycles += best.counters.cycles;
      macs += best.macs;
      dram_bytes += best.dram_bytes;
      time_us += best.time_us;
      energy_uj += best.energy_uj;
    }
  }
  json["ops"] = ops;
  json["totals"] = {{"cycles", cycles},       {"time_us", time_us},
                    {"macs", macs},           {"dram_bytes", dram_bytes},
                    {"energy_uj", energy_uj}, {"numerics_pass", report.numerics_pass()}};
  if (include_host_seconds) json["host_seconds"] = report.host_seconds;
  return json.dump(2) + "\n";
}

std::string to_table(const Report& report) {
  std::string out =
      fmt::format("tessera {} — machine {} ({:g} GHz), workload {}, {} op{}{}{}\n", report.command,
                  report.machine, report.clock_ghz, report.workload, report.ops.size(),
                  report.ops.size() == 1 ? "" : "s", report.timing_only ? ", timing only" : "",
                  report.objective == "cycles" ? "" : ", winners by " + report.objective);
  int64_t total_cycles = 0, total_dram = 0;
  double total_us = 0, total_energy = 0;
  for (const OpRecord& op : report.ops) {
    out += fmt::format("\n{}  {} {} {}  ({:.3g} GMAC; {} mappings scored)\n", op.name, op.kind, op.shape,
                       op.dtype, op.macs / 1e9, grouped(op.mapper_candidates));
    if (!op.not_simulated.empty()) {
      out += fmt::format("  not simulated: {}\n", op.not_simulated);
      continue;
    }
    // The dataflow column says fused or unfused where the op has an epilogue.
    const auto& label = run_label;
    size_t width = 9;
    for (const RunRecord& run : op.runs) width = std::max(width, label(run).size());
    out += fmt::format("  {:<3} {:<{}}", "", "dataflow", width) + figure_columns(nullptr);
    out += fmt::format("  {:<44} {}\n", "mapping", "numerics");
    for (const RunRecord& run : op.runs) {
      out += fmt::format("  {:<3} {:<{}}", run.winner ? "*" : "", label(run), width) + figure_columns(&run);
      out += fmt::format("  {:<44} {}\n", run.mapping.description, numerics_cell(run));
    }
    for (const RunRecord& run : op.runs)
      if (!run.loses_because.empty())
        out += fmt::format("      {} loses: {}\n", label(run), run.loses_because);
    {
      std::string simulated;
      for (const RunRecord& run : op.runs) {
        simulated +=
            fmt::format("{}{} {}", simulated.empty() ? "" : ", ", label(run), run.candidates_simulated);
        if (run.candidates_stopped > 0)
          simulated += fmt::format(" ({} stopped early)", run.candidates_stopped);
      }
      out += fmt::format("      candidates simulated: {}\n", simulated);
    }
    if (const FusionComparison fusion = fusion_comparison(op); fusion.available())
      out += fmt::format("      fusion: {}\n", fusion.text());
    if (op.winner >= 0 && op.dram_minimum_bytes > 0)
      out += fmt::format(
          "      DRAM: {} moves {:.2f} MB, {:.2f}x the minimum {:.2f} MB (every input read once, the output "
          "written once)\n",
          label(op.best()), op.best().dram_bytes / 1e6,
          static_cast<double>(op.best().dram_bytes) / static_cast<double>(op.dram_minimum_bytes),
          op.dram_minimum_bytes / 1e6);
    if (!op.pruned.empty()) {
      std::string list;
      for (const auto& [dataflow, ratio] : op.pruned)
        list += fmt::format("{}{} {:.1f}x", list.empty() ? "" : ", ", dataflow, ratio);
      out += fmt::format("      not simulated (estimated far behind the best): {}\n", list);
    }
    for (const GpuComparison& gpu : op.gpu) {
      if (gpu.time_us <= 0 || !gpu.compared) {
        // A record of another shape is no measurement of this op: say so, show none of its figures.
        out += fmt::format("  GPU {}: {}{}\n", gpu.gpu, gpu.time_us > 0 ? "not compared: " : "", gpu.note);
        continue;
      }
      out += fmt::format(
          "  GPU {} ({}, recorded {}): {:.1f} us{}, {:.1f} TFLOP/s, roofline floor {:.1f} us ({}-bound)",
          gpu.gpu, gpu.path, gpu.date.substr(0, 10), gpu.time_us,
          gpu.eager_us > 0 ? fmt::format(" on the device ({:.1f} eager)", gpu.eager_us) : std::string(),
          gpu.tflops, gpu.roofline_floor_us, gpu.roofline_bound);
      if (gpu.framework_us > 0) {
        out += fmt::format("; {} {:.1f} us (runner's like-for-like path {:.1f} us", gpu.framework,
                           gpu.framework_us, gpu.framework_runner_us);
        if (gpu.rounds > 0)
          out += fmt::format(", {:.2f}x over {} A/B rounds, {:.2f}-{:.2f}", gpu.ratio, gpu.rounds,
                             gpu.ratio_min, gpu.ratio_max);
        out += ")";
      }
      if (op.winner >= 0) out += fmt::format("; simulated {:.1f} us", op.best().time_us);
      out += "\n";
      if (gpu.contraction_only) out += fmt::format("    {}\n", gpu.note);
      if (op.winner >= 0) {
        const RunRecord& best = op.best();
        const SideBySide both = side_by_side(gpu, best, report);
        out += fmt::format(
            "    DRAM: GPU {}, simulated {}; utilisation: GPU tensor pipe {}, simulated PE array {:.1f}%\n",
            gpu.profiled ? megabytes(static_cast<int64_t>(gpu.gpu_dram_bytes)) + " MB" : "(no profile)",
            megabytes(best.dram_bytes) + " MB",
            gpu.profiled ? fmt::format("{:.0f}%", gpu.tensor_pipe_pct) : "(no profile)",
            100 * best.pe_utilization);
        auto position = [](const RooflinePosition& at) {
          return fmt::format("{:.0f} FLOP/B, {:.1f} of a {:.1f} TFLOP/s roof ({}-bound)", at.flop_per_byte,
                             at.attained_tflops, at.roof_tflops, at.bound);
        };
        if (both.simulated.roof_tflops > 0) {
          out += fmt::format("    roofline: GPU {}{}; simulated {}\n", position(both.gpu),
                             both.gpu_bytes_counted ? "" : " [fewest bytes]", position(both.simulated));
        } else {
          out += "    roofline: none (no matrix work: the op runs on the vector unit)\n";
        }
      }
    }
    if (!op.gpu_note.empty()) out += fmt::format("  GPU: {}\n", op.gpu_note);
    if (op.winner < 0) continue;
    const RunRecord& best = op.best();
    out += fmt::format("  where the {} cycles go (cycles, summed over the cores):\n", run_label(best));
    out += fmt::format("    {:<5}", "unit");
    for (const std::string& cause : report.cause_names) out += fmt::format(" {:>19}", cause);
    out += "\n";
    for (const auto& [kind, cycles] : by_kind(best.bubbles)) {
      out += fmt::format("    {:<5}", kind);
      int64_t sum = 0;
      for (const auto& entry : cycles) sum += entry.second;
      for (const auto& [cause, value] : cycles)
        out += fmt::format(" {:>12} ({:>4.1f}%)", grouped(value), sum > 0 ? 100.0 * value / sum : 0.0);
      out += "\n";
    }
    if (const CoreLoads loads = core_loads(best, best.counters.cycles);
        !loads.cores.empty() && loads.imbalance_cycles > 0) {
      std::vector<int64_t> busy;
      for (const CoreLoad& core : loads.cores) busy.push_back(core.pe_busy);
      std::sort(busy.begin(), busy.end());
      const CoreLoad& straggler = loads.cores[loads.straggler];
      out += fmt::format(
          "  per-core load: {} cores, PE busy min {} / median {} / max {} cycles (the straggler: core{}); {} "
          "unit-cycles lost to imbalance (waiting for other cores)\n",
          loads.cores.size(), grouped(busy.front()), grouped(busy[busy.size() / 2]), grouped(busy.back()),
          straggler.core, grouped(loads.imbalance_cycles));
    }
    total_cycles += best.counters.cycles;
    total_us += best.time_us;
    total_dram += best.dram_bytes;
    total_energy += best.energy_uj;
  }
  if (report.ops.size() > 1) out += layer_table(report);
  out += fmt::format(
      "\ntotal  {} cycles  {:.2f} us  DRAM {} MB  energy {:.2f} uJ  numerics: {}\n", grouped(total_cycles),
      total_us, megabytes(total_dram), total_energy,
      report.timing_only ? "not run (timing only)"
      : std::none_of(report.ops.begin(), report.ops.end(), [](const OpRecord& op) { return op.winner >= 0; })
          ? "none checked (no op simulated)"
      : report.numerics_pass() ? "all pass"
                               : "FAIL");
  return out;
}

CoreLoads core_loads(const RunRecord& run, int64_t cycles) {
  CoreLoads loads;
  std::map<std::string, size_t> index;
  for (const UnitBubbles& unit : run.bubbles) {
    // "core0,1.pe": the core's coordinates and the unit's queue.
    const size_t dot = unit.unit.find('.');
    if (unit.unit.rfind("core", 0) != 0 || dot == std::string::npos) continue;
    const std::string core = unit.unit.substr(4, dot - 4);
    auto [at, added] = index.emplace(core, loads.cores.size());
    if (added) loads.cores.push_back(CoreLoad{core, 0, 0});
    CoreLoad& load = loads.cores[at->second];
    int64_t imbalance = 0, busy = 0;
    for (const auto& [cause, value] : unit.cycles) {
      if (cause == "imbalance") imbalance = value;
      if (cause == "busy") busy = value;
    }
    load.done = std::max(load.done, cycles - imbalance);
    if (unit.kind == "pe") load.pe_busy += busy;
    loads.imbalance_cycles += imbalance;
  }
  if (loads.cores.size() < 2) return CoreLoads{};
  for (size_t c = 1; c < loads.cores.size(); ++c) {
    const CoreLoad& core = loads.cores[c];
    const CoreLoad& worst = loads.cores[loads.straggler];
    if (core.pe_busy > worst.pe_busy || (core.pe_busy == worst.pe_busy && core.done > worst.done))
      loads.straggler = c;
  }
  return loads;
}

std::string to_csv(const Report& report) {
  std::string out = "op,kind,shape,dtype,dataflow,winner";
  for (const RunFigure& figure : run_figures())
    if (figure.csv) out += fmt::format(",{}", figure.key);
  out += ",mapping,numerics_pass,rel_l2_err\n";
  for (const OpRecord& op : report.ops)
    for (const RunRecord& run : op.runs) {
      bool pass = true;
      double worst = 0;
      for (const Numerics& check : run.numerics) {
        pass = pass && check.pass;
        worst = std::max(worst, check.rel_l2_err);
      }
      out += fmt::format("{},{},{},{},{},{}", op.name, op.kind, op.shape, op.dtype, run.dataflow,
                         run.winner ? 1 : 0);
      for (const RunFigure& figure : run_figures())
        if (figure.csv) with_value(run, figure, [&](const auto& value) { out += fmt::format(",{}", value); });
      out += fmt::format(",\"{}\",{},{}\n", run.mapping.description,
                         run.numerics.empty() ? "" : (pass ? "1" : "0"),
                         run.numerics.empty() ? "" : fmt::format("{}", worst));
    }
  return out;
}

}  // namespace tessera::traces
