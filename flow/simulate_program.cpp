#include "flow/simulate_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "arch/isa/program_check.hpp"
#include "flow/numerics.hpp"
#include "flow/records.hpp"
#include "ops/op_registry.hpp"
#include "ops/reference.hpp"
#include "ops/workload.hpp"
#include "sim/machine.hpp"
#include "traces/chrome_trace.hpp"

namespace tessera::flow {

ops::Op op_from_binding(const arch::OpBinding& binding, const std::string& program_file, uint64_t* seed,
                        int op_line) {
  const SourceLocation where{program_file, op_line, op_line > 0 ? 1 : 0};
  auto integer = [&](const char* key) -> int64_t {
    auto found = binding.attributes.find(key);
    if (found == binding.attributes.end())
      throw InputError(
          where, "op", fmt::format("the op line has no {}=", key),
          "an op line names the op's workload entry (name, shape, dtype) and its index and seed");
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(found->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != found->second.size() || value < 0)
      throw InputError(where, "op", fmt::format("{}={} is not a non-negative integer", key, found->second));
    return value;
  };
  // The rest of the line is the op's workload entry: read it as one, with the workload's own checks.
  // A list field is written as its names joined by '+' ("epilogue=bias+gelu"): the kind says which are lists.
  std::vector<std::string> lists;
  if (const ops::OpKind* kind = ops::op_registry().find(binding.kind)) lists = ops::list_fields_of(*kind);
  YAML::Node entry;
  entry["kind"] = binding.kind;
  for (const auto& [key, value] : binding.attributes) {
    if (key == "index" || key == "seed") continue;
    const bool is_list = std::find(lists.begin(), lists.end(), key) != lists.end();
    YAML::Node field(is_list ? YAML::NodeType::Sequence : YAML::NodeType::Scalar);
    if (!is_list) field = value;
    for (size_t start = 0; is_list && start <= value.size();) {
      const size_t end = std::min(value.find('+', start), value.size());
      field.push_back(value.substr(start, end - start));
      start = end + 1;
    }
    const size_t dot = key.find('.');  // a group's field: kv_cache.layout
    const std::string name = key.substr(0, dot);
    // A name is a value (kv_cache=...) or a group (kv_cache.layout=...), not both.
    if (const YAML::Node given = entry[name]; given && given.IsMap() != (dot != std::string::npos))
      throw InputError(where, "op",
                       fmt::format("{} is given both as a value ({}=) and as a group of fields ({}.FIELD=)",
                                   name, name, name),
                       "keep one of the two");
    if (dot != std::string::npos)
      entry[name][key.substr(dot + 1)] = field;
    else
      entry[key] = field;
  }
  YAML::Node root;
  root["name"] = "program";
  root["seed"] = integer("seed");
  root["ops"].push_back(entry);
  config::Document document;
  document.root = root;
  document.file = program_file;
  // The entry was built here, so the workload reader's places in it mean nothing: the op line is the place.
  ops::Op op = [&] {
    try {
      return std::move(ops::workload_from_yaml(document).ops.front());
    } catch (const InputError& error) {
      std::string field = error.field();
      if (field.rfind("ops[0]", 0) == 0) field = "op" + field.substr(6);
      throw InputError(where, field, error.message(), error.hint());
    }
  }();
  op.index = static_cast<int>(integer("index"));
  *seed = static_cast<uint64_t>(integer("seed"));
  return op;
}

void check_op_tensors(const ops::Op& op, const arch::Program& program, const std::string& program_file) {
  const int op_line = program.header_lines.op;
  for (const ops::TensorDesc& expected : ops::tensors_of(op)) {
    const int id = program.tensor_id(expected.name);
    const std::string shape = fmt::format("{} {}x{}", name_of(expected.dtype), expected.rows, expected.cols);
    const std::string role = expected.is_output ? "output" : "input";
    // An index table (a paged cache's block table, a forced routing's permutation) is read by whoever makes
    // the DMA descriptors, as a paged cache's driver does: a program may hold it in its descriptors instead.
    if (id < 0 && expected.index_range > 0) continue;
    if (id < 0)
      throw InputError(
          SourceLocation{program_file, op_line, op_line > 0 ? 1 : 0}, "op",
          fmt::format("the op computes with tensor {} ({} {}), which the program does not declare",
                      expected.name, role, shape),
          "declare it, or correct the op line to the op the program computes");
    const arch::TensorDecl& tensor = program.tensors[static_cast<size_t>(id)];
    const bool role_matches = expected.is_output ? tensor.role == arch::TensorRole::output
                                                 : tensor.role != arch::TensorRole::output;
    // A tensor is its bytes in row-major order: a program may view it with other rows and columns of the same
    // count (a bshd cache's K as [tokens, kv_heads * d], so that a kv head is one strided region).
    const bool same_elements = static_cast<__int128>(tensor.rows) * tensor.cols ==
                               static_cast<__int128>(expected.rows) * expected.cols;
    if (!role_matches || tensor.dtype != expected.dtype || !same_elements) {
      const size_t index = static_cast<size_t>(id);
      const int line = index < program.header_lines.tensors.size() ? program.header_lines.tensors[index] : 0;
      throw InputError(
          SourceLocation{program_file, line, line > 0 ? 1 : 0}, "tensor " + tensor.name,
          fmt::format("the op line (line {}) makes {} an {} {}, the program declares {} {}x{}", op_line,
                      expected.name, role, shape, name_of(tensor.dtype), tensor.rows, tensor.cols),
          "the op line and the tensors describe one op (a tensor may be viewed with other rows and "
          "columns of the same count): correct whichever is wrong");
    }
  }
}

ProgramRun simulate_program(const arch::Program& program, const std::string& program_path,
                            const arch::ArchSpec& spec, bool timing_only, bool trace, int threads) {
  arch::check_program(program, spec);
  std::optional<ops::Op> op;
  uint64_t seed = 0;
  if (program.op) {
    op = op_from_binding(*program.op, program_path, &seed, program.header_lines.op);
    check_op_tensors(*op, program, program_path);
  }
  sim::Machine machine(spec);
  const bool check_numerics = !timing_only && program.op.has_value();
  sim::RunOptions options{!timing_only, trace};
  options.threads = threads;
  const sim::RunResult result = machine.run(program, options);

  ProgramRun run;
  traces::Report& report = run.report;
  report = empty_report("sim", spec, program.name, timing_only);
  traces::OpRecord op_record;
  op_record.name = program.name;
  op_record.kind = program.op ? program.op->kind : "program";
  traces::RunRecord record = record_of(result, spec);
  record.dataflow = "program";
  record.winner = true;
  // No form mapped it: the program is its own.
  record.mapping.dataflow = "program";
  record.mapping.fields = {{"form", std::string("program")}};
  record.mapping.description = "as written in " + program_path;
  if (op) {
    op_record.shape = op->shape_text();
    op_record.dtype = name_of(op->dtype);
    op_record.macs = op->macs();
    if (check_numerics) {
      const int output = program.tensor_id("O");
      if (output < 0 || program.tensors[output].role != arch::TensorRole::output)
        throw InputError(SourceLocation{program_path, 0, 0}, "tensor O",
                         "a gemm program declares its output as tensor O");
      const auto reference = ops::reference_output(*op, ops::generate_inputs(*op, seed), threads);
      record.numerics.push_back(check_against_cpu(*op, reference, result, output));
    }
  }
  op_record.runs.push_back(std::move(record));
  op_record.winner = 0;
  report.ops.push_back(std::move(op_record));
  if (trace) {
    std::vector<traces::TraceTrack> tracks;
    std::vector<traces::TraceInterval> intervals;
    append_trace(result, program, spec, program.name, 0, tracks, intervals);
    run.chrome_trace = traces::to_chrome_trace(tracks, intervals);
  }
  return run;
}

}  // namespace tessera::flow
