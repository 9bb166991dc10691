// The machine (DESIGN.md, "Folders"): a plain, validated, immutable description parsed from
// configs/arch/*.yaml. Field names carry their units; an optional field's default is its initialiser here,
// the one place it is stated (spec.cpp's field lists read and write every field through them); derived values
// are computed once in derive() (STYLE.md, "Configuration").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/vector_spec.hpp"
#include "common/config.hpp"
#include "common/dtype.hpp"
#include "common/element_fn.hpp"

namespace tessera::arch {

// rs (row stationary, Eyeriss) runs convolution instructions only (arch::PeConv); ws, os and is run both.
enum class Dataflow : uint8_t { ws, os, is, rs };
const char* name_of(Dataflow dataflow);
const std::vector<std::string>& dataflow_names();
Dataflow parse_dataflow(const std::string& name);  // name must be one of dataflow_names()

struct MeshSpec {
  int rows = 1;
  int cols = 1;
  int cores() const { return rows * cols; }
};

struct NocSpec {
  std::string impl = "mesh";  // the network's model (arch/noc.hpp): a name of noc_impl_names()
  double link_bytes_per_cycle = 0;
  int router_latency_cycles = 1;
  bool multicast = true;
};

enum class DramPlacement : uint8_t { perimeter, west };
// How an address picks its channel: consecutive interleave blocks go to consecutive channels (none), or the
// block number's higher bits are XOR-folded in first (xor), as memory controllers do so that power-of-two
// strides (the rows of a tile) spread over the channels instead of camping on one.
enum class ChannelHash : uint8_t { none, xor_fold };

// Run-length coding of sparse activations on their way to and from DRAM (Eyeriss's RLC, JSSC 2017 Sec.
// III-A): a word of `word_bytes` holds `pairs_per_word` pairs of a run of up to 2^run_bits - 1 zeros and the
// non-zero value after it (arch/timing/compression.hpp).
struct RlcSpec {
  int run_bits = 5;
  int pairs_per_word = 3;
  int word_bytes = 8;
};

struct DramSpec {
  double bandwidth_gbps = 0;
  int channels = 1;
  int latency_cycles = 0;
  int64_t interleave_bytes = 256;  // consecutive blocks of this size go to consecutive channels
  DramPlacement placement = DramPlacement::perimeter;
  ChannelHash channel_hash = ChannelHash::xor_fold;
  std::optional<RlcSpec> rlc;  // absent: DRAM traffic is moved as it is
  // derived
  double bytes_per_cycle = 0;          // all channels together, at the machine clock
  double channel_bytes_per_cycle = 0;  // one channel
};

// How much of one fold a PE array overlaps with the next (docs/pe-array-timing.md):
//   none:  each fold runs start to finish (one stationary register, one accumulator);
//   drain: the next fold's preload (WS/IS, RS) or fill (OS) overlaps this fold's drain, not its stream;
//   full:  the next fold's preload and fill overlap this fold's stream and drain (double-buffered registers).
enum class FoldOverlap : uint8_t { none, drain, full };

// An epilogue step a PE array's output path applies to a finished output tile as it drains, at no cost in
// time (Eyeriss's ReLU before its ofmaps are coded, a TPU's activation unit): `core.pe_array.output_steps`,
// named as an op's epilogue steps. A `pe post` instruction (arch/isa/pe_post.hpp) says which to apply to
// which tile.
// (common/element_fn.hpp, kInOutputPath).
using OutputStep = ElementFn;
const std::vector<std::string>& output_step_names();
// Whether an output path of `path` applies `steps`: each of them, in their order, is in it in the same order.
bool output_path_applies(const std::vector<OutputStep>& path, const std::vector<OutputStep>& steps);

struct PeArraySpec {
  int rows = 0;
  int cols = 0;
  std::vector<Dataflow> dataflows = {Dataflow::ws, Dataflow::os, Dataflow::is, Dataflow::rs};
  std::vector<DType> dtypes = {DType::fp32, DType::bf16, DType::fp16, DType::int8};
  FoldOverlap overlap_folds = FoldOverlap::full;
  std::vector<OutputStep> output_steps;  // applied in this order; empty: the array has no output path

  bool supports(Dataflow dataflow) const;
  bool supports(DType dtype) const;
  int64_t pes() const { return static_cast<int64_t>(rows) * cols; }
};

// The register file of one PE split per operand, for row stationary (docs/pe-array-timing.md, "RS"): filter
// weights, a window of input activations and partial sums, in bytes. Without `core.pe_spad_bytes` in the
// YAML, pe_register_bytes is split half / quarter / quarter.
struct PeSpadSpec {
  int64_t filter_bytes = 0;
  int64_t ifmap_bytes = 0;
  int64_t psum_bytes = 0;
  int64_t total() const { return filter_bytes + ifmap_bytes + psum_bytes; }
};

struct SramSpec {
  int64_t kib = 0;
  int banks = 1;
  int bank_width_bytes = 1;
  // derived
  int64_t bytes = 0;
  int64_t bank_row_bytes = 0;  // banks * bank_width_bytes: one access to every bank
  int bank_of(uint64_t address) const { return static_cast<int>((address / bank_width_bytes) % banks); }
};

struct DmaSpec {
  int engines = 1;
  double bytes_per_cycle = 0;
  int setup_cycles = 0;
  int64_t burst_bytes = 256;
  int outstanding_bursts = 64;  // bursts in flight per engine (Little's law: caps bandwidth at bytes/latency)
};

struct CoreSpec {
  PeArraySpec pe_array;
  int pe_register_bytes = 64;
  PeSpadSpec pe_spad;  // always set: given, or split from pe_register_bytes
  SramSpec sram;
  DmaSpec dma;
  std::optional<VectorSpec> vector;  // absent: the core has no vector unit (vector ops cannot run on it)
};

struct EnergySpec {
  double mac = 0.5;
  double sram_byte = 1.0;
  double dram_byte = 20.0;
  double noc_byte_hop = 0.3;
  // Each core, each cycle of a run, busy or waiting: its clock network, control and leakage. 0 by default
  // (the event costs alone); with it, a slower mapping pays for its time as the chip does.
  double core_cycle = 0.0;
};

struct ArchSpec {
  std::string name;
  double clock_ghz = 1.0;
  MeshSpec mesh;
  NocSpec noc;
  DramSpec dram;
  CoreSpec core;
  EnergySpec energy_pj;

  // Computes the derived fields. arch_from_yaml calls it after checking every rule; code that builds a spec
  // by hand (tests) calls it too.
  void derive();
};

ArchSpec arch_from_yaml(const config::Document& document);
// The resolved form: every field, defaults filled, derived values left out.
YAML::Node to_yaml(const ArchSpec& spec);

}  // namespace tessera::arch
