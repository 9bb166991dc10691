#include "sim/transfer_engine.hpp"

#include "arch/timing/compression.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/tile_kernels.hpp"

namespace tessera::sim {

struct TransferEngine::Transfer {
  Tick start = 0;
  Tick done = 0;
  Tick bank_delay = 0;
  int64_t bytes = 0;
  std::function<void()> commit;
};

namespace {
int64_t packed_or(int64_t pitch, int64_t row_bytes) {
  return pitch != 0 ? pitch : row_bytes;
}
}  // namespace

TransferEngine::TransferEngine(sc_core::sc_module_name name, MachineState& machine, int core,
                               arch::QueueId queue)
    : Unit(name, machine, core, queue), this_core_{core} {}

void TransferEngine::reset_run_state() {
  engine_free_ = 0;
  in_flight_.assign(static_cast<size_t>(machine_.spec.core.dma.outstanding_bursts), 0);
  ring_next_ = 0;
  streams_.assign(static_cast<size_t>(std::max(1, machine_.spec.dram.channels)), Stream{});
  touched_.clear();
  transfer_bursts_ = 0;
  expected_done_ = 0;
  issue_bytes_ = trip_bytes_ = -1;
}

// Inline: they run once a burst.
// The engine's ticks to issue a burst of `bytes`, and the burst's uncontended round trip past its path's
// latency: cached, since most bursts are the size of the one before.
inline Tick TransferEngine::issue_ticks_of(int64_t bytes) {
  if (bytes != issue_bytes_) {
    const double ticks = static_cast<double>(bytes) * kTicksPerCycle / machine_.spec.core.dma.bytes_per_cycle;
    issue_bytes_ = bytes;
    issue_ticks_ = static_cast<Tick>(std::ceil(ticks - 1e-9));
  }
  return issue_ticks_;
}

inline Tick TransferEngine::trip_ticks_of(int64_t bytes, bool through_dram) {
  if (bytes != trip_bytes_ || through_dram != trip_through_dram_) {
    trip_bytes_ = bytes;
    trip_through_dram_ = through_dram;
    trip_ticks_ = machine_.fabric.burst_ticks(bytes, through_dram);
  }
  return trip_ticks_;
}

inline Tick TransferEngine::issue_slot(int64_t bytes) {
  const Tick slot_free = in_flight_[ring_next_];  // the burst `outstanding` before this one must be done
  const Tick issue = std::max(engine_free_, slot_free);
  engine_free_ = issue + issue_ticks_of(bytes);
  return issue;
}

inline void TransferEngine::retire(Tick done) {
  in_flight_[ring_next_] = done;
  if (++ring_next_ == in_flight_.size()) ring_next_ = 0;
}

// Inlined into each engine's burst loop: it runs once a burst (a call costs as much as its work).
template <class Latency>
[[gnu::always_inline]] inline void TransferEngine::add_burst(int channel, int64_t bytes, bool through_dram,
                                                             Latency&& latency) {
  Stream& stream = streams_[static_cast<size_t>(channel)];
  bytes = arch::coded_bytes(bytes, coding_);  // what a coded transfer's burst moves
  const Tick issue = issue_slot(bytes);
  if (stream.bytes == 0) {
    stream.first = issue;
    stream.latency = latency();
    touched_.push_back(channel);
  }
  stream.last = engine_free_;
  stream.bytes += bytes;
  // The slot is free again once the burst's uncontended round trip is over.
  const Tick done = issue + stream.latency + trip_ticks_of(bytes, through_dram);
  retire(done);
  expected_done_ = std::max(expected_done_, done);
  ++transfer_bursts_;
  ++counters_.bursts;
}

std::optional<TransferEngine::BurstGrid> TransferEngine::burst_grid(uint64_t address, int64_t rows,
                                                                    int64_t row_bytes, int64_t stride) const {
  const int64_t interleave = machine_.spec.dram.interleave_bytes;
  const int64_t burst_bytes = machine_.spec.core.dma.burst_bytes;
  if (rows <= 0 || row_bytes <= 0 || stride < 0 || (interleave & (interleave - 1)) != 0) return std::nullopt;
  const auto block = static_cast<uint64_t>(interleave);
  const auto into_block = static_cast<int64_t>(address & (block - 1));
  // A row that is one burst: each row the same place in its block (the stride a whole number of blocks).
  if (row_bytes <= burst_bytes && row_bytes <= interleave - into_block &&
      (rows == 1 || stride % interleave == 0))
    return BurstGrid{address, rows, 1, row_bytes, stride};
  // Rows cut into bursts of the grain g = min(burst, interleave): every row starts on the grain and is a
  // whole number of grains, and g divides the block, so each piece split_into_bursts cuts is exactly g.
  const int64_t grain = std::min(burst_bytes, interleave);
  if (interleave % grain != 0 || static_cast<int64_t>(address % static_cast<uint64_t>(grain)) != 0 ||
      row_bytes % grain != 0 || (rows > 1 && stride % grain != 0))
    return std::nullopt;
  return BurstGrid{address, rows, row_bytes / grain, grain, stride};
}

template <class Latency>
void TransferEngine::add_burst_grid(const BurstGrid& grid, bool through_dram, Latency&& latency_of) {
  add_burst_rows(
      grid.rows, grid.per_row, grid.bytes,
      [&](int64_t row) { return grid.address + static_cast<uint64_t>(row * grid.stride); }, through_dram,
      latency_of);
}

template <class RowAddress, class Latency>
void TransferEngine::add_burst_rows(int64_t rows, int64_t per_row, int64_t bytes, RowAddress&& row_address,
                                    bool through_dram, Latency&& latency_of) {
  // add_burst's steps, burst by burst, with the burst size, its issue ticks and its trip fixed. A coded
  // transfer's bursts move fewer bytes than they span.
  const int64_t moved = arch::coded_bytes(bytes, coding_);
  const Tick step = issue_ticks_of(moved);
  const Tick trip = trip_ticks_of(moved, through_dram);
  const Fabric& fabric = machine_.fabric;
  Tick* const slots = in_flight_.data();
  const size_t slot_count = in_flight_.size();
  size_t slot = ring_next_;
  Tick engine_free = engine_free_;
  Tick expected = expected_done_;
  for (int64_t row = 0; row < rows; ++row) {
    uint64_t address = row_address(row);
    for (int64_t piece = 0; piece < per_row; ++piece) {
      const int channel = fabric.channel_of(address);
      address += static_cast<uint64_t>(bytes);
      const Tick issue = std::max(engine_free, slots[slot]);
      engine_free = issue + step;
      Stream& stream = streams_[static_cast<size_t>(channel)];
      if (stream.bytes == 0) {
        stream.first = issue;
        stream.latency = latency_of(channel);
        touched_.push_back(channel);
      }
      stream.last = engine_free;
      stream.bytes += moved;
      const Tick done = issue + stream.latency + trip;
      slots[slot] = done;
      if (++slot == slot_count) slot = 0;
      expected = std::max(expected, done);
    }
  }
  const int64_t count = rows * per_row;
  engine_free_ = engine_free;
  ring_next_ = slot;
  expected_done_ = expected;
  transfer_bursts_ += static_cast<size_t>(count);
  counters_.bursts += count;
}

void TransferEngine::finish_streams(Tick done) {
  // Contention made the transfer finish later than its bursts' uncontended round trips: its bursts held their
  // slots that much longer, which the engine's next bursts wait for.
  if (done > expected_done_) {
    const Tick delay = done - expected_done_;
    const size_t held = std::min(transfer_bursts_, in_flight_.size());
    for (size_t i = 1; i <= held; ++i)
      in_flight_[(ring_next_ + in_flight_.size() - i) % in_flight_.size()] += delay;
  }
  for (int channel : touched_) streams_[static_cast<size_t>(channel)] = Stream{};
  touched_.clear();
  transfer_bursts_ = 0;
  expected_done_ = 0;
}

void TransferEngine::execute(const arch::Instruction& instruction, int32_t position) {
  const Tick ready = now();
  Transfer transfer;
  transfer.start = std::max(ready, engine_free_);
  engine_free_ = transfer.start + cycles_to_ticks(machine_.spec.core.dma.setup_cycles);
  // The engine reads its source when it starts the descriptor (functional runs snapshot it then).
  wait_until(transfer.start);
  machine_.fabric.retire_before(transfer.start);
  std::visit(
      [&](const auto& operation) {
        using T = std::decay_t<decltype(operation)>;
        if constexpr (std::is_same_v<T, arch::DmaLoad>) run_load(operation, transfer);
        if constexpr (std::is_same_v<T, arch::DmaStore>) run_store(operation, transfer);
        if constexpr (std::is_same_v<T, arch::NocSend>) run_send(operation, transfer);
      },
      instruction.operation);
  counters_.bytes_moved += transfer.bytes;
  timeline_.advance_waits(ready, waits_, position);
  timeline_.advance(transfer.done - std::min(transfer.bank_delay, transfer.done - transfer.start),
                    arch::Cause::busy, position);
  timeline_.advance(transfer.done, arch::Cause::bank_conflict, position);
  complete_at(transfer.done, instruction, std::move(transfer.commit));
  // The next descriptor may start once every burst of this one is issued.
  wait_until(engine_free_);
}

template <class Burst>
void TransferEngine::split_into_bursts(uint64_t dram_address, int64_t bytes, Burst&& burst) {
  const int64_t interleave = machine_.spec.dram.interleave_bytes;
  const int64_t burst_bytes = machine_.spec.core.dma.burst_bytes;
  const auto block = static_cast<uint64_t>(interleave);
  const bool power_of_two = (block & (block - 1)) == 0;
  // The common piece (a tile row) is one burst: it fits a burst and its interleave block.
  const uint64_t first_into_block = power_of_two ? dram_address & (block - 1) : dram_address % block;
  if (bytes <= burst_bytes && bytes <= interleave - static_cast<int64_t>(first_into_block)) {
    if (bytes > 0) burst(dram_address, bytes);
    return;
  }
  for (int64_t offset = 0; offset < bytes;) {
    // A burst stays inside one DRAM interleave block, so one channel serves it.
    const uint64_t address = dram_address + static_cast<uint64_t>(offset);
    const uint64_t into_block = power_of_two ? address & (block - 1) : address % block;
    const int64_t to_block_end = interleave - static_cast<int64_t>(into_block);
    const int64_t size = std::min({burst_bytes, bytes - offset, to_block_end});
    burst(address, size);
    offset += size;
  }
}

std::optional<TransferEngine::BurstGrid> TransferEngine::grid_of(const arch::TensorDecl& tensor,
                                                                 const arch::TensorRegion& region) const {
  const int64_t element = size_bytes(tensor.dtype);
  if (region.col == 0 && region.cols == tensor.cols)  // whole rows: one contiguous run
    return burst_grid(tensor.dram_address + static_cast<uint64_t>(region.row * tensor.cols * element), 1,
                      region.rows * region.cols * element, 0);
  return burst_grid(
      tensor.dram_address + static_cast<uint64_t>((region.row * tensor.cols + region.col) * element),
      region.rows, region.cols * element, tensor.cols * element);
}

template <class Burst>
void TransferEngine::for_each_dram_burst(const arch::TensorDecl& tensor, const arch::TensorRegion& region,
                                         Burst&& burst) {
  const int64_t element = size_bytes(tensor.dtype);
  if (region.col == 0 && region.cols == tensor.cols) {  // whole rows: one contiguous run
    split_into_bursts(tensor.dram_address + static_cast<uint64_t>(region.row * tensor.cols * element),
                      region.rows * region.cols * element, burst);
    return;
  }
  for (int64_t row = 0; row < region.rows; ++row)
    split_into_bursts(tensor.dram_address +
                          static_cast<uint64_t>(((region.row + row) * tensor.cols + region.col) * element),
                      region.cols * element, burst);
}

template <class Latency>
bool TransferEngine::add_gather_bursts(const arch::TensorDecl& view, const arch::TensorDecl& source,
                                       const arch::TensorRegion& region, Latency&& latency_of) {
  // Every gathered row cuts into the same bursts when the rows are a whole number of interleave blocks apart;
  // a whole-row region's merged runs (consecutive source rows) then cut as their rows do, since a row is a
  // whole number of blocks.
  const int64_t element = size_bytes(view.dtype);
  const int64_t interleave = machine_.spec.dram.interleave_bytes;
  if ((view.cols * element) % interleave != 0) return false;
  const std::vector<int64_t>& rows = view.view_if<arch::RowGatherView>()->rows;
  gather_addresses_.clear();
  for (int64_t r = 0; r < region.rows; ++r) {
    const int64_t row = rows[static_cast<size_t>(region.row + r)];
    if (row != arch::RowGatherView::kZeroRow)
      gather_addresses_.push_back(source.dram_address +
                                  static_cast<uint64_t>((row * view.cols + region.col) * element));
  }
  if (gather_addresses_.empty()) return true;
  const std::optional<BurstGrid> shape = burst_grid(gather_addresses_[0], 1, region.cols * element, 0);
  if (!shape) return false;
  add_burst_rows(
      static_cast<int64_t>(gather_addresses_.size()), shape->per_row, shape->bytes,
      [&](int64_t r) { return gather_addresses_[static_cast<size_t>(r)]; }, true, latency_of);
  return true;
}

namespace {
// The pieces a load reads, row by row: piece(row, byte offset in the row, source byte offset in the DRAM
// tensor or -1 for zeros, bytes). A plain tensor gives one piece per row (one for the whole region when it
// spans whole rows); a view its runs (a row gather's run of consecutive whole rows spans them all).
template <class Piece>
void for_each_load_piece(const arch::Program& program, const arch::TensorRegion& region, Piece&& piece) {
  const arch::TensorDecl& tensor = program.tensors[region.tensor];
  const int64_t element = size_bytes(tensor.dtype);
  if (tensor.role != arch::TensorRole::view) {
    // Whole rows of the tensor are one contiguous run (a direct conv's input tile with every channel).
    if (region.col == 0 && region.cols == tensor.cols) {
      piece(0, 0, region.row * tensor.cols * element, region.rows * region.cols * element);
      return;
    }
    for (int64_t row = 0; row < region.rows; ++row)
      piece(row, 0, ((region.row + row) * tensor.cols + region.col) * element, region.cols * element);
    return;
  }
  // Each view's own runs (a row gather's run of consecutive whole rows spans them all).
  arch::for_each_view_run(*tensor.view, tensor.cols, region.row, region.rows, region.col, region.cols,
                          [&](int64_t row, int64_t offset, int64_t source, int64_t count) {
                            piece(row, offset * element, source < 0 ? -1 : source * element, count * element);
                          });
}
// Lands a load's bytes from its storage's DRAM image into `rows` rows of `row_bytes`, `pitch` apart, at `out`
// (the banks, or a packed staging buffer): each piece where the region says, one that runs over several rows
// (whole rows of the tensor are one piece) split at the rows. Padding is left as it is.
void land_load_pieces(const arch::Program& program, const arch::TensorRegion& region, const uint8_t* dram,
                      uint8_t* out, int64_t row_bytes, int64_t pitch) {
  for_each_load_piece(program, region, [&](int64_t row, int64_t offset, int64_t source, int64_t bytes) {
    if (source < 0) return;
    for (int64_t at = row * row_bytes + offset, end = at + bytes; at < end;) {
      const int64_t within = at % row_bytes, count = std::min(end - at, row_bytes - within);
      std::memcpy(out + (at / row_bytes) * pitch + within, dram + source + (at - row * row_bytes - offset),
                  static_cast<size_t>(count));
      at += count;
    }
  });
}
}  // namespace

void TransferEngine::run_load(const arch::DmaLoad& load, Transfer& transfer) {
  const arch::Program& program = *machine_.program;
  const arch::TensorDecl& tensor = program.tensors[load.source.tensor];
  // A view reads its source's storage.
  const int storage = tensor.role == arch::TensorRole::view ? tensor.view_source() : load.source.tensor;
  const uint64_t base = program.tensors[storage].dram_address;
  const int64_t element = size_bytes(tensor.dtype);
  const int64_t row_bytes = load.source.cols * element;
  const int64_t pitch = packed_or(load.sram_pitch_bytes, row_bytes);
  const std::vector<int>& destinations = load.destinations.empty() ? this_core_ : load.destinations;
  Tick first_arrival = ~Tick{0};
  Fabric& fabric = machine_.fabric;
  fabric.begin_load(destinations);
  // A sparse input (an activation with a density) moves run-length coded where the machine codes it.
  const arch::TensorDecl& stored = program.tensors[storage];
  coding_ = stored.role == arch::TensorRole::input
                ? arch::coded_fraction(machine_.spec.dram.rlc, stored.density, stored.dtype)
                : 1.0;
  const auto burst = [&](uint64_t dram_address, int64_t bytes) {
    const int channel = fabric.channel_of(dram_address);
    add_burst(channel, bytes, true, [&] { return fabric.load_latency(channel); });
  };
  // A plain tensor's region is a grid of bursts (its rows, or one run when it spans whole rows), mostly added
  // in closed form.
  const std::optional<BurstGrid> grid =
      tensor.role == arch::TensorRole::view ? std::nullopt : grid_of(tensor, load.source);
  const auto latency = [&](int channel) { return fabric.load_latency(channel); };
  if (grid) {
    add_burst_grid(*grid, true, latency);
  } else if (!(tensor.view_if<arch::RowGatherView>() &&
               add_gather_bursts(tensor, program.tensors[storage], load.source, latency))) {
    // Padding zeros cost no DRAM or NoC traffic; the engine writes them with the rest of the tile.
    for_each_load_piece(program, load.source, [&](int64_t, int64_t, int64_t source, int64_t bytes) {
      if (source >= 0) split_into_bursts(base + static_cast<uint64_t>(source), bytes, burst);
    });
  }
  for (int channel : touched_) {
    const Stream& stream = streams_[static_cast<size_t>(channel)];
    transfer.done = std::max(transfer.done, fabric.load_stream(channel, Flow{stream.first, stream.last},
                                                               stream.bytes, first_arrival));
  }
  finish_streams(transfer.done);
  coding_ = 1.0;
  if (first_arrival == ~Tick{0}) first_arrival = transfer.done = transfer.start;  // all padding
  // The bytes land in each destination's banks as they arrive.
  for (int destination : destinations) {
    const SramRegion region{destination, load.sram_address, load.source.rows, row_bytes, pitch};
    transfer.bank_delay = std::max(transfer.bank_delay,
                                   machine_.fabric.book_sram_region(region, 1, first_arrival, transfer.done));
  }
  transfer.done += transfer.bank_delay;
  transfer.bytes = load.source.rows * row_bytes * static_cast<int64_t>(destinations.size());
  machine_.fabric.traffic().sram_write_bytes += transfer.bytes;
  if (!machine_.functional) return;
  if (program.tensors[storage].role == arch::TensorRole::input) {
    // Inputs are read-only (only outputs are stored into: DmaStore::check), so the bytes at completion are
    // the bytes at issue: they go from DRAM straight to the banks, without a copy in between.
    transfer.commit = [this, destinations, region = load.source, storage, rows = load.source.rows, row_bytes,
                       pitch, address = load.sram_address]() {
      const arch::Program& program = *machine_.program;
      const uint8_t* dram = machine_.dram[storage].data();
      const bool padded = program.tensors[region.tensor].role == arch::TensorRole::view;
      // A tile's rows lie far apart in a large tensor (a 4096-wide bf16 matrix: 256 B of every 8 KiB), where
      // the hardware's prefetcher does not follow: ask for the tile's lines first, so their misses overlap
      // rather than come four at a time with each row's copy (the first rows' worth, up to 64 KiB).
      int64_t asked = 0;
      for_each_load_piece(program, region, [&](int64_t, int64_t, int64_t source, int64_t bytes) {
        constexpr int64_t kLine = 64, kMostAsked = int64_t{64} << 10;
        for (int64_t at = 0; source >= 0 && at < bytes && asked < kMostAsked; at += kLine, asked += kLine)
          __builtin_prefetch(dram + source + at);
      });
      for (int destination : destinations) {
        machine_.log_sram_write(destination, address, rows, row_bytes, pitch);
        uint8_t* sram = machine_.cores[destination].sram.data() + address;
        if (padded)  // a view's padding lands as zeros
          for (int64_t row = 0; row < rows; ++row)
            std::memset(sram + row * pitch, 0, static_cast<size_t>(row_bytes));
        land_load_pieces(program, region, dram, sram, row_bytes, pitch);
      }
    };
    return;
  }
  // Snapshot now, land at completion: a buffer that someone overwrites before then shows up in the numbers.
  std::vector<uint8_t> staged(static_cast<size_t>(load.source.rows * row_bytes), 0);
  land_load_pieces(program, load.source, machine_.dram[storage].data(), staged.data(), row_bytes, row_bytes);
  transfer.commit = [this, destinations, staged = std::move(staged), rows = load.source.rows, row_bytes,
                     pitch, address = load.sram_address]() {
    for (int destination : destinations) {
      machine_.log_sram_write(destination, address, rows, row_bytes, pitch);
      uint8_t* sram = machine_.cores[destination].sram.data() + address;
      for (int64_t row = 0; row < rows; ++row)
        std::memcpy(sram + row * pitch, staged.data() + row * row_bytes, static_cast<size_t>(row_bytes));
    }
  };
}

void TransferEngine::run_store(const arch::DmaStore& store, Transfer& transfer) {
  const arch::Program& program = *machine_.program;
  const arch::TensorDecl& tensor = program.tensors[store.destination.tensor];
  const int64_t element = size_bytes(tensor.dtype);
  const int64_t row_bytes = store.destination.cols * element;
  const int64_t pitch = packed_or(store.sram_pitch_bytes, row_bytes);
  Fabric& fabric = machine_.fabric;
  // A sparse output is stored run-length coded where the machine codes it; partial sums added into DRAM are
  // not (the lowering declares an output that takes them dense).
  coding_ =
      store.accumulate ? 1.0 : arch::coded_fraction(machine_.spec.dram.rlc, tensor.density, tensor.dtype);
  const std::optional<BurstGrid> grid = grid_of(tensor, store.destination);
  if (grid) {
    add_burst_grid(*grid, true,
                   [&](int channel) { return fabric.store_latency(core_, channel, store.accumulate); });
  } else {
    for_each_dram_burst(tensor, store.destination, [&](uint64_t dram_address, int64_t bytes) {
      const int channel = fabric.channel_of(dram_address);
      add_burst(channel, bytes, true, [&] { return fabric.store_latency(core_, channel, store.accumulate); });
    });
  }
  for (int channel : touched_) {
    const Stream& stream = streams_[static_cast<size_t>(channel)];
    transfer.done = std::max(
        transfer.done,
        fabric.store_stream(core_, channel, Flow{stream.first, stream.last}, stream.bytes, store.accumulate));
  }
  finish_streams(transfer.done);
  coding_ = 1.0;
  // The engine reads the source banks as it issues the bursts; a bank that cannot keep up delays them all.
  const SramRegion source{core_, store.sram_address, store.destination.rows, row_bytes, pitch};
  transfer.bank_delay = machine_.fabric.book_sram_region(source, 1, transfer.start, engine_free_);
  transfer.done += transfer.bank_delay;
  transfer.bytes = store.destination.rows * row_bytes;
  machine_.fabric.traffic().sram_read_bytes += transfer.bytes;
  if (!machine_.functional) return;
  std::vector<uint8_t> staged(static_cast<size_t>(store.destination.rows * row_bytes));
  const std::vector<uint8_t>& sram = machine_.cores[core_].sram;
  for (int64_t row = 0; row < store.destination.rows; ++row)
    std::memcpy(staged.data() + row * row_bytes, sram.data() + store.sram_address + row * pitch,
                static_cast<size_t>(row_bytes));
  transfer.commit = [this, store, tensor_dtype = tensor.dtype, tensor_cols = tensor.cols, element, row_bytes,
                     staged = std::move(staged)]() {
    uint8_t* dram = machine_.dram[store.destination.tensor].data();
    uint8_t* first = dram + (store.destination.row * tensor_cols + store.destination.col) * element;
    const int64_t dram_pitch = tensor_cols * element;
    if (store.accumulate) {
      ops::add_tile(tensor_dtype, first, dram_pitch, staged.data(), row_bytes, store.destination.rows,
                    store.destination.cols);
    } else {
      for (int64_t row = 0; row < store.destination.rows; ++row)
        std::memcpy(first + row * dram_pitch, staged.data() + row * row_bytes,
                    static_cast<size_t>(row_bytes));
    }
  };
}

void TransferEngine::run_send(const arch::NocSend& send, Transfer& transfer) {
  const auto& dma = machine_.spec.core.dma;
  const int64_t source_pitch = packed_or(send.source_pitch_bytes, send.row_bytes);
  const int64_t destination_pitch = packed_or(send.destination_pitch_bytes, send.row_bytes);
  Tick first_arrival = ~Tick{0};
  Fabric& fabric = machine_.fabric;
  // One stream: every burst takes the same route. Its slot in streams_ is channel 0's, free between
  // transfers.
  for (int64_t row = 0; row < send.rows; ++row) {
    for (int64_t offset = 0; offset < send.row_bytes;) {
      const int64_t bytes = std::min(dma.burst_bytes, send.row_bytes - offset);
      add_burst(0, bytes, false, [&] { return fabric.send_latency(core_, send.destination_core); });
      offset += bytes;
    }
  }
  if (!touched_.empty()) {
    const Stream& stream = streams_[0];
    transfer.done = std::max(transfer.done,
                             fabric.send_stream(core_, send.destination_core, Flow{stream.first, stream.last},
                                                stream.bytes, first_arrival));
  }
  finish_streams(transfer.done);
  if (first_arrival == ~Tick{0}) first_arrival = transfer.done = transfer.start;
  // Source banks are read as bursts issue; destination banks are written (read first, to add) as they arrive.
  const SramRegion source{core_, send.source_address, send.rows, send.row_bytes, source_pitch};
  const SramRegion target{send.destination_core, send.destination_address, send.rows, send.row_bytes,
                          destination_pitch};
  const int64_t accesses = send.accumulate ? 2 : 1;
  transfer.bank_delay =
      std::max(machine_.fabric.book_sram_region(source, 1, transfer.start, engine_free_),
               machine_.fabric.book_sram_region(target, accesses, first_arrival, transfer.done));
  transfer.done += transfer.bank_delay;
  transfer.bytes = send.rows * send.row_bytes;
  machine_.fabric.traffic().sram_read_bytes += transfer.bytes * accesses;
  machine_.fabric.traffic().sram_write_bytes += transfer.bytes;
  if (!machine_.functional) return;
  std::vector<uint8_t> staged(static_cast<size_t>(send.rows * send.row_bytes));
  const std::vector<uint8_t>& sram = machine_.cores[core_].sram;
  for (int64_t row = 0; row < send.rows; ++row)
    std::memcpy(staged.data() + row * send.row_bytes, sram.data() + send.source_address + row * source_pitch,
                static_cast<size_t>(send.row_bytes));
  transfer.commit = [this, send, destination_pitch, staged = std::move(staged)]() {
    machine_.log_sram_write(send.destination_core, send.destination_address, send.rows, send.row_bytes,
                            destination_pitch);
    uint8_t* target = machine_.cores[send.destination_core].sram.data() + send.destination_address;
    if (send.accumulate) {
      const int64_t element = size_bytes(send.accumulate_dtype);
      ops::add_tile(send.accumulate_dtype, target, destination_pitch, staged.data(), send.row_bytes,
                    send.rows, send.row_bytes / element);
    } else {
      for (int64_t row = 0; row < send.rows; ++row)
        std::memcpy(target + row * destination_pitch, staged.data() + row * send.row_bytes,
                    static_cast<size_t>(send.row_bytes));
    }
  };
}

}  // namespace tessera::sim
