#include "sim/unit.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tessera::sim {

Unit::Unit(sc_core::sc_module_name name, MachineState& machine, int core, arch::QueueId queue)
    : sc_core::sc_module(name), machine_(machine), core_(core), queue_(queue) {
  SC_THREAD(thread);
  set_stack_size(kUnitStackBytes);
}

void Unit::load(const arch::CoreProgram* core_program, bool trace) {
  core_program_ = core_program;
  instructions_.clear();
  next_ = 0;
  if (core_program)
    for (const arch::Instruction& instruction : core_program->instructions)
      if (instruction.queue == queue_) instructions_.push_back(&instruction);
  timeline_.reset(trace);
  counters_ = UnitCounters{};
  blocked_on_ = nullptr;
  error_ = nullptr;
  reset_run_state();
}

void Unit::start() {
  start_requested_ = true;
  start_.notify(sc_core::SC_ZERO_TIME);
}

void Unit::thread() {
  for (;;) {
    // Every run, the first included, starts from the start event (never from SystemC's initialisation phase):
    // units then wake in the same order each run, so equal-time bookings happen in the same order and a
    // program takes the same cycles whatever ran before it on this machine.
    do wait(start_);
    while (!start_requested_);
    start_requested_ = false;
    try {
      while (next_ < instructions_.size() && !machine_.stopping) {
        const arch::Instruction& instruction = *instructions_[next_];
        acquire(instruction);
        execute(instruction, static_cast<int32_t>(next_));
        ++counters_.instructions;
        ++next_;
      }
      next_ = instructions_.size();  // done, or stopped before its next instruction
    } catch (const Stopped&) {
      next_ = instructions_.size();
    } catch (...) {
      // Surfaces from Machine::run after sc_start returns; this unit stops where it is.
      error_ = std::current_exception();
      next_ = instructions_.size();
    }
  }
}

Semaphore& Unit::semaphore(const arch::SemaphoreRef& ref) {
  const int core = ref.core == arch::kSameCore ? core_ : ref.core;
  return machine_.cores[core].semaphores[ref.id];
}

void Unit::acquire(const arch::Instruction& instruction) {
  waits_.clear();
  for (const arch::SemaphoreWait& wait_for : instruction.waits) {
    Semaphore& target = semaphore(wait_for.semaphore);
    for (int taken = 0; taken < wait_for.count; ++taken) {
      const Tick started = now();
      blocked_on_ = &wait_for;
      blocked_signals_taken_ = taken;
      while (!target.available()) {
        wait(target.posted());
        if (machine_.stopping) throw Stopped{};
      }
      blocked_on_ = nullptr;
      waits_.push_back(WaitSegment{started, now(), target.take()});
    }
  }
}

void Unit::complete_at(Tick at, const arch::Instruction& instruction, std::function<void()> commit) {
  std::optional<Tick>& done = machine_.core_done[static_cast<size_t>(core_)];
  done = std::max(done.value_or(0), at);
  if (queue_.kind == arch::QueueKind::vec) {
    std::optional<Tick>& vector = machine_.vector_done[static_cast<size_t>(core_)];
    vector = std::max(vector.value_or(0), at);
  }
  const arch::Cause cause = arch::waiters_cause(instruction.operation);
  // A store's signal to another core is a barrier's: the core waiting on it waits for this core to finish its
  // share (imbalance), not for a buffer of its own to drain.
  const arch::Cause barrier = cause == arch::Cause::output_backpressure ? arch::Cause::imbalance : cause;
  Completion* const completion = machine_.complete_at(at);
  if (!completion) return;
  completion->commit = std::move(commit);
  for (const arch::SemaphoreRef& ref : instruction.signals) {
    if (ref.core == arch::kSameCore) {
      arch::for_each_same_core_signal_target(instruction.operation, core_, [&](int target) {
        completion->posts.emplace_back(&machine_.cores[static_cast<size_t>(target)].semaphores[ref.id],
                                       cause);
      });
    } else {
      completion->posts.emplace_back(&semaphore(ref), ref.core == core_ ? cause : barrier);
    }
  }
}

void Unit::wait_until(Tick at) {
  const Tick current = now();
  if (at > current) wait(sc_core::sc_time::from_value(at - current));
  if (machine_.stopping) throw Stopped{};
}

void Unit::fail_instruction(const arch::Instruction& instruction, int32_t position,
                            const std::string& message, const std::string& hint) const {
  const arch::Program& program = *machine_.program;
  throw InputError(arch::location_of(program, instruction),
                   arch::describe_instruction(program, *core_program_, instruction, position), message, hint);
}

std::string Unit::describe_blocked() const {
  const arch::Program& program = *machine_.program;
  const arch::Instruction& instruction = *instructions_[next_];
  std::string text =
      arch::describe_instruction(program, *core_program_, instruction, static_cast<int64_t>(next_));
  const SourceLocation where = arch::location_of(program, instruction);
  if (where.line > 0) text += " (" + where.str() + ")";
  if (!blocked_on_) return text + " has not started";
  const int semaphore_core =
      blocked_on_->semaphore.core == arch::kSameCore ? core_ : blocked_on_->semaphore.core;
  const arch::Coord coord = arch::core_coord(semaphore_core, machine_.spec.mesh);
  return text + fmt::format(" waits for {} of core {},{} (signal {} of {}, none pending)",
                            program.semaphores[blocked_on_->semaphore.id], coord.row, coord.col,
                            blocked_signals_taken_ + 1, blocked_on_->count);
}

UnitResult Unit::finish(Tick end) {
  close_timeline();
  // Idle after its own work: waiting for its core's vector unit (vector) while that still works, for the rest
  // of its core (sync) until the core's share is done, then for the other cores (imbalance). A core without
  // instructions this run is not behind anyone: sync.
  const std::optional<Tick> core_done = machine_.core_done[static_cast<size_t>(core_)];
  if (const std::optional<Tick> vector_done = machine_.vector_done[static_cast<size_t>(core_)])
    timeline_.advance(*vector_done, arch::Cause::vector);
  timeline_.advance(core_done.value_or(end), arch::Cause::sync);
  timeline_.advance(end, arch::Cause::imbalance);
  UnitResult result;
  result.core = core_;
  result.queue = queue_;
  const arch::Coord coord = arch::core_coord(core_, machine_.spec.mesh);
  result.name = fmt::format("core{},{}.{}", coord.row, coord.col, arch::name_of(queue_));
  result.cycles = timeline_.cycles();
  result.counters = counters_;
  result.trace = std::move(timeline_.trace());
  return result;
}

}  // namespace tessera::sim
