#include "sim/machine.hpp"

#include <fmt/format.h>

#include <chrono>

#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_ASAN 1
#endif
#endif
#ifdef TESSERA_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include "arch/isa/program_check.hpp"
#include "common/large_memory.hpp"
#include "ops/tensor.hpp"
#include "sim/unit_table.hpp"
#include "sim/worker_pool.hpp"

namespace tessera::sim {

namespace {
void configure_systemc() {
  static bool configured = false;
  if (configured) return;
  configured = true;
  // One machine cycle is 1 ns of SystemC time and a tick 1 ps (sim/time.hpp); this must precede any sc_time.
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  // Library code never prints: SystemC's errors become exceptions, its informational chatter is dropped.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_FATAL, sc_core::SC_THROW);
}
// SystemC's coroutine switches tell ASan which stack runs next (docs/design-notes.md, "What ASan needs from
// SystemC's coroutines"), but a switch back to the main context names the stack [0, 0): libsystemc has no
// bounds for the stack it did not allocate. From then until the next switch ASan cannot unpoison the main
// stack when an exception leaves frames without their epilogues ("ASan is ignoring requested
// __asan_handle_no_return"), and the stale poison of those frames is reported later, wherever the stack
// reaches them again (a stack-use-after-scope in the destructor of whatever lives there). Each sc_start
// returns through this guard, which names the thread's real stack again. Nothing in a build without ASan.
class MainStackForAsan {
 public:
  MainStackForAsan() = default;
  MainStackForAsan(const MainStackForAsan&) = delete;
  MainStackForAsan& operator=(const MainStackForAsan&) = delete;
#ifdef TESSERA_ASAN
  ~MainStackForAsan() {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
    void* bottom = nullptr;
    size_t size = 0;
    const bool known = pthread_attr_getstack(&attributes, &bottom, &size) == 0;
    pthread_attr_destroy(&attributes);
    if (!known) return;
    // A switch to the stack this code already runs on: ASan takes its bounds, nothing moves.
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  }
#endif
};
}  // namespace

Machine::Machine(const arch::ArchSpec& spec) : spec_(spec) {
  configure_systemc();
  scheduler_ = std::make_unique<Scheduler>("scheduler");
  state_ = std::make_unique<MachineState>(spec_, *scheduler_);
  for (int core = 0; core < spec_.mesh.cores(); ++core) state_->cores.emplace_back();
  for (int core = 0; core < spec_.mesh.cores(); ++core) {
    const arch::Coord coord = arch::core_coord(core, spec_.mesh);
    const std::string prefix = fmt::format("core_{}_{}_", coord.row, coord.col);
    for (const UnitKind& kind : unit_table())
      for (int index = 0; index < kind.queues_per_core(spec_); ++index) {
        const arch::QueueId queue{kind.queue, index};
        units_.push_back(kind.make((prefix + arch::name_of(queue)).c_str(), *state_, core, queue));
      }
  }
}

Machine::~Machine() = default;

void Machine::prepare_memory(const arch::Program& program, bool functional) {
  state_->hazards = 0;
  for (CoreState& core : state_->cores) {
    core.write_log.clear();
    core.semaphores.clear();
    for (size_t i = 0; i < program.semaphores.size(); ++i) core.semaphores.emplace_back();
    if (functional) {
      core.sram.assign(static_cast<size_t>(spec_.core.sram.bytes), 0);
    } else {
      core.sram.clear();
      core.sram.shrink_to_fit();
    }
  }
  state_->dram.assign(program.tensors.size(), {});
  if (!functional) return;
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const arch::TensorDecl& tensor = program.tensors[i];
    const auto* listed = tensor.fill_if<arch::ValuesFill>();
    if (tensor.role == arch::TensorRole::input && listed) {
      state_->dram[i] = ops::tensor_of_values(tensor.dtype, tensor.rows, tensor.cols, listed->values).bytes;
    } else if (tensor.role == arch::TensorRole::input) {
      std::optional<ops::RopeTableFill> table;
      if (const auto* rope = tensor.fill_if<arch::RopeTableFill>())
        table = ops::RopeTableFill{rope->position, rope->base};
      state_->dram[i] =
          ops::generate_input(tensor.dtype, tensor.rows, tensor.cols, tensor.seed, tensor.generator_id, table)
              .bytes;
    } else {
      state_->dram[i] = large_zeroed<uint8_t>(static_cast<size_t>(tensor.size_in_bytes()));
    }
  }
}

RunResult Machine::run(const arch::Program& program, const RunOptions& options) {
  TESSERA_ASSERT(!broken_, "a machine whose last run deadlocked or faulted is not run again");
  arch::check_program(program, spec_);
  const auto started = std::chrono::steady_clock::now();

  prepare_memory(program, options.functional);
  state_->program = &program;
  state_->functional = options.functional;
  state_->fabric.reset();
  state_->origin = now_ticks();
  state_->last_completion = 0;
  state_->core_done.assign(state_->cores.size(), std::nullopt);
  state_->vector_done.assign(state_->cores.size(), std::nullopt);
  state_->stopping = false;
  state_->stop_after = MachineState::kNoStop;
  // A bound past what ticks can hold is no bound; a negative one stops at the first completion after 0.
  if (options.cycle_bound &&
      *options.cycle_bound < static_cast<int64_t>(MachineState::kNoStop / kTicksPerCycle))
    state_->stop_after = cycles_to_ticks(std::max<int64_t>(0, *options.cycle_bound));

  if (!initialized_) {
    // SystemC's initialisation phase runs every thread up to its first wait: afterwards each unit waits on
    // its start event, exactly as it does between later runs.
    {
      [[maybe_unused]] const MainStackForAsan main_stack;
      sc_core::sc_start(sc_core::SC_ZERO_TIME);
    }
    initialized_ = true;
  }
  for (auto& unit : units_) {
    const arch::CoreProgram* core_program = nullptr;
    for (const arch::CoreProgram& core : program.cores)
      if (arch::core_index(core.coord, spec_.mesh) == unit->core()) core_program = &core;
    unit->load(core_program, options.trace);
    unit->start();
  }
  {
    // Gone (every job finished, the threads joined) before the run's memory is read or used again, however
    // the run ends.
    std::optional<JobPool> arithmetic;
    if (options.functional && options.threads > 1) arithmetic.emplace(options.threads);
    struct Detach {
      MachineState& state;
      ~Detach() {
        state.arithmetic = nullptr;
        for (CoreState& core : state.cores) core.reading.clear();
      }
    } detach{*state_};
    state_->arithmetic = arithmetic ? &*arithmetic : nullptr;
    try {
      [[maybe_unused]] const MainStackForAsan main_stack;
      sc_core::sc_start();
    } catch (const sc_core::sc_report& report) {
      broken_ = true;
      throw InternalError(std::string("SystemC: ") + report.what());
    }
  }

  for (auto& unit : units_) {
    if (unit->error()) {
      broken_ = true;
      std::rethrow_exception(unit->error());
    }
  }
  if (state_->stopping) {
    // Every unit left its work at its next wait (MachineState::stop): the model is ready for the next run.
    RunResult stopped;
    stopped.stopped = true;
    stopped.bound_cycles = *options.cycle_bound;
    stopped.counters.instructions = program.instruction_count();
    stopped.functional = options.functional;
    state_->program = nullptr;
    stopped.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return stopped;
  }
  std::vector<std::string> blocked;
  for (auto& unit : units_)
    if (!unit->finished()) blocked.push_back(unit->describe_blocked());
  if (!blocked.empty()) {
    broken_ = true;
    std::string details;
    for (const auto& line : blocked) details += "\n  " + line;
    throw InputError(SourceLocation{program.source_file.empty() ? "(program)" : program.source_file, 0, 0},
                     "", "deadlock: work remains but no unit can make progress; waiting:" + details,
                     "every wait needs a matching signal from an instruction that can itself run");
  }

  RunResult result;
  result.end_ticks = state_->last_completion;
  // The fabric's traffic, the run's own counters, and its units' merged by each counter's rule.
  result.counters = state_->fabric.traffic();
  result.counters.cycles = ticks_to_cycles_ceil(result.end_ticks);
  result.counters.instructions = program.instruction_count();
  result.functional = options.functional;
  UnitCounters all_units;
  for (auto& unit : units_) {
    UnitResult unit_result = unit->finish(result.end_ticks);
    merge_into(all_units, unit_result.counters, unit_counters());
    result.units.push_back(std::move(unit_result));
  }
  result.counters.pe_macs = all_units.macs;
  result.counters.active_pes = all_units.active_pes;
  result.counters.sram_hazards = state_->hazards;
  if (options.functional) {
    for (size_t i = 0; i < program.tensors.size(); ++i) {
      const arch::TensorDecl& tensor = program.tensors[i];
      if (tensor.role != arch::TensorRole::output) continue;
      ops::HostTensor out;  // the DRAM image itself, not a copy (nor a zeroed buffer it replaces)
      out.dtype = tensor.dtype;
      out.rows = tensor.rows;
      out.cols = tensor.cols;
      out.bytes = std::move(state_->dram[i]);
      result.outputs.emplace(static_cast<int>(i), std::move(out));
    }
  }
  state_->program = nullptr;
  result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace tessera::sim
