#include "sweep/results.hpp"

#include <fmt/format.h>

#include "arch/isa/cause.hpp"

namespace tessera::sweep {

namespace {

using nlohmann::json;

// The figures of one row after the point, workload and op columns.
struct Figures {
  std::string dataflow, status, message;
  std::string cycles, time_us, pe_utilization, dram_bytes, energy_uj;
  std::vector<std::string> pe_shares;  // per cause (arch::all_causes), of the PE arrays' time
  std::string numerics;
};

std::string number(const json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number()) return fmt::format("{}", value.get<double>());
  return "";
}

std::vector<std::string> shares_of(const std::vector<double>& cycles) {
  double total = 0;
  for (const double c : cycles) total += c;
  std::vector<std::string> shares;
  for (const double c : cycles) shares.push_back(total > 0 ? fmt::format("{}", c / total) : "0");
  return shares;
}

std::vector<double> pe_cycles(const json& run) {
  std::vector<double> cycles;
  const json& pe = run.at("bubbles_by_kind").at("pe");
  for (const arch::Cause cause : arch::all_causes()) cycles.push_back(pe.value(arch::name_of(cause), 0.0));
  return cycles;
}

std::string numerics_of(const json& run) {
  const json& checks = run.at("numerics");
  if (checks.empty()) return "none";
  for (const json& check : checks)
    if (!check.value("pass", false)) return "fail";
  return "pass";
}

const json& winner_of(const json& op) {
  for (const json& run : op.at("runs"))
    if (run.value("winner", false)) return run;
  throw std::runtime_error("op " + op.value("name", std::string("?")) + " has no winning run");
}

std::string row(const SweepSpec& spec, const Point& point, const std::string& workload, const std::string& op,
                const Figures& figures) {
  std::string line = fmt::format("{},{}", point.index, point.id);
  for (size_t a = 0; a < spec.axes.size(); ++a)
    line += "," + csv_field(spec.axes[a].values[point.value_index[a]].text);
  for (const std::string* field :
       {&workload, &op, &figures.dataflow, &figures.status, &figures.message, &figures.cycles,
        &figures.time_us, &figures.pe_utilization, &figures.dram_bytes, &figures.energy_uj})
    line += "," + csv_field(*field);
  for (size_t c = 0; c < arch::all_causes().size(); ++c)
    line += "," + (c < figures.pe_shares.size() ? figures.pe_shares[c] : std::string());
  return line + "," + figures.numerics + "\n";
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

JobRecord record_of_report(const std::string& report_text) {
  JobRecord record;
  try {
    record.report = json::parse(report_text);
    for (const json& op : record.report.at("ops")) winner_of(op);
    const bool pass = record.report.at("totals").at("numerics_pass").get<bool>();
    record.status = pass ? "ok" : "mismatch";
  } catch (const std::exception& error) {
    record = JobRecord{"crashed", std::string("its report is not one tessera writes: ") + error.what(), {}};
  }
  return record;
}

std::string csv_header(const SweepSpec& spec) {
  std::string line = "point,point_id";
  for (const Axis& axis : spec.axes) line += "," + csv_field(axis.path);
  line += ",workload,op,dataflow,status,message,cycles,time_us,pe_utilization,dram_bytes,energy_uj";
  for (const arch::Cause cause : arch::all_causes())
    line += fmt::format(",pe_{}_share", arch::name_of(cause));
  return line + ",numerics\n";
}

std::string csv_rows(const SweepSpec& spec, const Point& point, const std::string& workload_name,
                     const JobRecord& record) {
  if (record.status != "ok" && record.status != "mismatch") {
    Figures figures;
    figures.status = record.status;
    figures.message = record.message;
    return row(spec, point, workload_name, "", figures);
  }
  const json& report = record.report;
  const bool timing_only = report.value("timing_only", false);
  std::string rows;
  double cycles_sum = 0, busy_cycles = 0;
  std::vector<double> pe_total(arch::all_causes().size(), 0.0);
  bool all_pass = true;
  for (const json& op : report.at("ops")) {
    const json& run = winner_of(op);
    Figures figures;
    figures.dataflow = run.value("dataflow", std::string());
    figures.status = record.status;
    figures.cycles = number(run.at("cycles"));
    figures.time_us = number(run.at("time_us"));
    figures.pe_utilization = number(run.at("pe_utilization"));
    figures.dram_bytes = number(run.at("dram_bytes"));
    figures.energy_uj = number(run.at("energy_uj"));
    const std::vector<double> cycles = pe_cycles(run);
    figures.pe_shares = shares_of(cycles);
    figures.numerics = timing_only ? "skipped" : numerics_of(run);
    all_pass = all_pass && figures.numerics != "fail";
    for (size_t c = 0; c < cycles.size(); ++c) pe_total[c] += cycles[c];
    const double op_cycles = run.at("cycles").get<double>();
    cycles_sum += op_cycles;
    busy_cycles += run.at("pe_utilization").get<double>() * op_cycles;
    rows += row(spec, point, workload_name, op.value("name", std::string()), figures);
  }
  // The workload's total: the report's totals; utilisation weighted by each op's cycles.
  const json& totals = report.at("totals");
  Figures figures;
  figures.status = record.status;
  figures.cycles = number(totals.at("cycles"));
  figures.time_us = number(totals.at("time_us"));
  figures.pe_utilization = cycles_sum > 0 ? fmt::format("{}", busy_cycles / cycles_sum) : "0";
  figures.dram_bytes = number(totals.at("dram_bytes"));
  figures.energy_uj = number(totals.at("energy_uj"));
  figures.pe_shares = shares_of(pe_total);
  figures.numerics = timing_only ? "skipped" : all_pass ? "pass" : "fail";
  return rows + row(spec, point, workload_name, "(total)", figures);
}

}  // namespace tessera::sweep
