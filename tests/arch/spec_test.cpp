// The machine spec (arch/spec.hpp): the shipped machines parse and derive what their comments say, every
// rule of the spec is enforced with a location, and the resolved form written next to a report reads back
// as the same machine.
#include "arch/spec.hpp"
#include "support/input_errors.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace tessera::arch {
namespace {

std::string arch_config(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/configs/arch/" + name;
}

using testing_support::input_error_of;

// A small valid machine; tests change one line of it. Line numbers are in the comments of the tests.
const std::string kMachine =
    "name: t\n"
    "clock_ghz: 1.0\n"
    "mesh: {rows: 2, cols: 2}\n"
    "noc: {link_bytes_per_cycle: 64}\n"
    "dram: {bandwidth_gbps: 256, channels: 4, latency_cycles: 100}\n"
    "core:\n"
    "  pe_array: {rows: 32, cols: 32}\n"
    "  sram: {kib: 256, banks: 16, bank_width_bytes: 64}\n"
    "  dma: {engines: 2, bytes_per_cycle: 64, setup_cycles: 16}\n";

// kMachine with `from` replaced by `to` (which must occur exactly once).
std::string machine_with(const std::string& from, const std::string& to) {
  return testing_support::replaced_once(kMachine, from, to);
}

ArchSpec parse(const std::string& text) {
  return arch_from_yaml(config::load_text(text, "m.yaml"));
}

InputError parse_error(const std::string& text) {
  return input_error_of([&] { parse(text); });
}

// Every field, read from the file or defaulted, and every derived value.
void expect_same_machine(const ArchSpec& a, const ArchSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.clock_ghz, b.clock_ghz);
  EXPECT_EQ(a.mesh.rows, b.mesh.rows);
  EXPECT_EQ(a.mesh.cols, b.mesh.cols);
  EXPECT_EQ(a.noc.link_bytes_per_cycle, b.noc.link_bytes_per_cycle);
  EXPECT_EQ(a.noc.router_latency_cycles, b.noc.router_latency_cycles);
  EXPECT_EQ(a.noc.multicast, b.noc.multicast);
  EXPECT_EQ(a.dram.bandwidth_gbps, b.dram.bandwidth_gbps);
  EXPECT_EQ(a.dram.channels, b.dram.channels);
  EXPECT_EQ(a.dram.latency_cycles, b.dram.latency_cycles);
  EXPECT_EQ(a.dram.interleave_bytes, b.dram.interleave_bytes);
  EXPECT_EQ(a.dram.placement, b.dram.placement);
  EXPECT_EQ(a.dram.bytes_per_cycle, b.dram.bytes_per_cycle);
  EXPECT_EQ(a.dram.channel_bytes_per_cycle, b.dram.channel_bytes_per_cycle);
  EXPECT_EQ(a.core.pe_array.rows, b.core.pe_array.rows);
  EXPECT_EQ(a.core.pe_array.cols, b.core.pe_array.cols);
  EXPECT_EQ(a.core.pe_array.dataflows, b.core.pe_array.dataflows);
  EXPECT_EQ(a.core.pe_array.dtypes, b.core.pe_array.dtypes);
  EXPECT_EQ(a.core.pe_array.overlap_folds, b.core.pe_array.overlap_folds);
  EXPECT_EQ(a.core.pe_register_bytes, b.core.pe_register_bytes);
  EXPECT_EQ(a.core.sram.kib, b.core.sram.kib);
  EXPECT_EQ(a.core.sram.banks, b.core.sram.banks);
  EXPECT_EQ(a.core.sram.bank_width_bytes, b.core.sram.bank_width_bytes);
  EXPECT_EQ(a.core.sram.bytes, b.core.sram.bytes);
  EXPECT_EQ(a.core.sram.bank_row_bytes, b.core.sram.bank_row_bytes);
  EXPECT_EQ(a.core.dma.engines, b.core.dma.engines);
  EXPECT_EQ(a.core.dma.bytes_per_cycle, b.core.dma.bytes_per_cycle);
  EXPECT_EQ(a.core.dma.setup_cycles, b.core.dma.setup_cycles);
  EXPECT_EQ(a.core.dma.burst_bytes, b.core.dma.burst_bytes);
  EXPECT_EQ(a.core.dma.outstanding_bursts, b.core.dma.outstanding_bursts);
  EXPECT_EQ(a.energy_pj.mac, b.energy_pj.mac);
  EXPECT_EQ(a.energy_pj.sram_byte, b.energy_pj.sram_byte);
  EXPECT_EQ(a.energy_pj.dram_byte, b.energy_pj.dram_byte);
  EXPECT_EQ(a.energy_pj.noc_byte_hop, b.energy_pj.noc_byte_hop);
  ASSERT_EQ(a.core.vector.has_value(), b.core.vector.has_value());
  if (a.core.vector) {
    EXPECT_EQ(a.core.vector->lanes, b.core.vector->lanes);
    EXPECT_EQ(a.core.vector->special_per_cycle, b.core.vector->special_per_cycle);
    EXPECT_EQ(a.core.vector->latency_cycles, b.core.vector->latency_cycles);
    EXPECT_EQ(a.core.vector->tree_depth, b.core.vector->tree_depth);
    EXPECT_EQ(a.core.vector->special_issue_cycles, b.core.vector->special_issue_cycles);
  }
}

ArchSpec through_resolved_form(const ArchSpec& spec) {
  return arch_from_yaml(config::load_text(config::to_yaml_text(to_yaml(spec)), "resolved.yaml"));
}

// ---------------------------------------------------------------------------------------------------------
// Shipped machines

TEST(ShippedMachines, EveryConfigParsesAndSurvivesItsResolvedForm) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(arch_config(""))) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ArchSpec spec = arch_from_yaml(config::load_file(entry.path().string()));
    EXPECT_EQ(spec.name + ".yaml", entry.path().filename().string()) << "a machine is named after its file";
    EXPECT_GT(spec.core.pe_array.pes(), 0);
    EXPECT_GT(spec.dram.bytes_per_cycle, 0);
    expect_same_machine(through_resolved_form(spec), spec);
    names.insert(spec.name);
  }
  // The ones the docs and e2e tests name must be among them.
  for (const char* name : {"default", "mesh4x4", "systolic-32x32", "tpu-v1"})
    EXPECT_EQ(names.count(name), 1u) << name;
}

TEST(ShippedMachines, DefaultDerivesBandwidthsAndSramGeometry) {
  const ArchSpec spec = arch_from_yaml(config::load_file(arch_config("default.yaml")));
  EXPECT_EQ(spec.mesh.cores(), 4);
  EXPECT_EQ(spec.core.pe_array.pes(), 1024);
  EXPECT_DOUBLE_EQ(spec.dram.bytes_per_cycle, 256.0);  // 256 GB/s at 1 GHz
  EXPECT_DOUBLE_EQ(spec.dram.channel_bytes_per_cycle, 64.0);
  EXPECT_EQ(spec.core.sram.bytes, 256 * 1024);
  EXPECT_EQ(spec.core.sram.bank_row_bytes, 16 * 64);
  // Defaults of fields the file leaves out.
  EXPECT_EQ(spec.dram.interleave_bytes, 256);
  EXPECT_EQ(spec.dram.placement, DramPlacement::perimeter);
  EXPECT_EQ(spec.core.dma.burst_bytes, 256);
  EXPECT_EQ(spec.core.dma.outstanding_bursts, 64);
  EXPECT_EQ(spec.core.pe_array.dtypes,
            (std::vector<DType>{DType::fp32, DType::bf16, DType::fp16, DType::int8}));
  EXPECT_DOUBLE_EQ(spec.energy_pj.mac, 0.5);
}

TEST(ShippedMachines, Mesh4x4Derives) {
  const ArchSpec spec = arch_from_yaml(config::load_file(arch_config("mesh4x4.yaml")));
  EXPECT_EQ(spec.mesh.cores(), 16);
  EXPECT_DOUBLE_EQ(spec.dram.bytes_per_cycle, 1024.0);
  EXPECT_DOUBLE_EQ(spec.dram.channel_bytes_per_cycle, 128.0);
  EXPECT_EQ(spec.core.sram.bytes, 512 * 1024);
  EXPECT_EQ(spec.core.sram.bank_row_bytes, 1024);
}

TEST(ShippedMachines, Systolic32x32Derives) {
  const ArchSpec spec = arch_from_yaml(config::load_file(arch_config("systolic-32x32.yaml")));
  EXPECT_EQ(spec.mesh.cores(), 1);
  EXPECT_DOUBLE_EQ(spec.dram.bytes_per_cycle, 8192.0);
  EXPECT_DOUBLE_EQ(spec.dram.channel_bytes_per_cycle, 512.0);
  EXPECT_EQ(spec.core.sram.bytes, int64_t{64} * 1024 * 1024);
  EXPECT_EQ(spec.core.sram.bank_row_bytes, 64 * 64);
  EXPECT_EQ(spec.core.dma.burst_bytes, 4096);
}

TEST(ShippedMachines, TpuV1DerivesFromItsPublishedFigures) {
  // [ISCA17]: 34 GB/s of DDR3 in two channels at a 700 MHz clock; a 256x256 int8 weight-stationary array.
  const ArchSpec spec = arch_from_yaml(config::load_file(arch_config("tpu-v1.yaml")));
  EXPECT_DOUBLE_EQ(spec.dram.bytes_per_cycle, 34.0 / 0.7);
  EXPECT_DOUBLE_EQ(spec.dram.channel_bytes_per_cycle, 34.0 / 0.7 / 2);
  EXPECT_EQ(spec.core.pe_array.pes(), 65536);
  EXPECT_EQ(spec.core.sram.bytes, int64_t{24} * 1024 * 1024);
  EXPECT_EQ(spec.core.sram.bank_row_bytes, 4096);
  EXPECT_FALSE(spec.noc.multicast);
  EXPECT_TRUE(spec.core.pe_array.supports(Dataflow::ws));
  EXPECT_FALSE(spec.core.pe_array.supports(Dataflow::os));
  EXPECT_TRUE(spec.core.pe_array.supports(DType::int8));
  EXPECT_FALSE(spec.core.pe_array.supports(DType::bf16));
  EXPECT_DOUBLE_EQ(spec.energy_pj.sram_byte, 1.25);
}

// ---------------------------------------------------------------------------------------------------------
// Derived values

TEST(SramBanks, ConsecutiveWordsGoToConsecutiveBanksAndWrapEveryRow) {
  const ArchSpec spec = parse(kMachine);  // 16 banks of 64 B
  const SramSpec& sram = spec.core.sram;
  EXPECT_EQ(sram.bank_of(0), 0);
  EXPECT_EQ(sram.bank_of(63), 0);
  EXPECT_EQ(sram.bank_of(64), 1);
  EXPECT_EQ(sram.bank_of(15 * 64), 15);
  EXPECT_EQ(sram.bank_of(1023), 15);
  EXPECT_EQ(sram.bank_of(1024), 0);  // one bank row on: back to bank 0
  EXPECT_EQ(sram.bank_of(1024 + 130), 2);
  EXPECT_EQ(sram.bank_of(sram.bytes - 1), 15);
}

TEST(ArchSpec, DeriveUsesTheClock) {
  const ArchSpec spec = parse(machine_with("clock_ghz: 1.0", "clock_ghz: 2.0"));
  EXPECT_DOUBLE_EQ(spec.dram.bytes_per_cycle, 128.0);  // 256 GB/s at 2 GHz
  EXPECT_DOUBLE_EQ(spec.dram.channel_bytes_per_cycle, 32.0);
}

// ---------------------------------------------------------------------------------------------------------
// Rules

TEST(ArchSpec, MachineWithoutPesIsRejectedAtTheField) {
  EXPECT_EQ(std::string(parse_error(machine_with("{rows: 32,", "{rows: 0,")).what()),
            "m.yaml:7:20: core.pe_array.rows: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(std::string(parse_error(machine_with("cols: 32}", "cols: 0}")).what()),
            "m.yaml:7:30: core.pe_array.cols: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(std::string(parse_error(machine_with("mesh: {rows: 2", "mesh: {rows: 0")).what()),
            "m.yaml:3:14: mesh.rows: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
}

TEST(ArchSpec, CountTooLargeForTheSpecIsRejectedNotWrapped) {
  // 2^32 PE rows would wrap to 0 in an int; 2^31 to a negative count.
  EXPECT_EQ(std::string(parse_error(machine_with("{rows: 32,", "{rows: 4294967296,")).what()),
            "m.yaml:7:20: core.pe_array.rows: 4294967296 is too large (at most 2147483647)");
  EXPECT_EQ(parse_error(machine_with("banks: 16", "banks: 2147483648")).field(), "core.sram.banks");
}

TEST(ArchSpec, ValuesPastAnyRealMachineAreRefusedWithTheRangeAndItsReason) {
  // Before: each was accepted and simulated (clock_ghz 1e-300, a 2^40 KiB SRAM, a 100000-row array,
  // 1e300 GB/s, a 1000x1000 mesh that spent minutes building its routes) or silently slow (interleave 3).
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"clock_ghz: 1.0", "clock_ghz: 1e-300"},
       "m.yaml:2:12: clock_ghz: 1e-300 is too small (at least 0.001)\n  hint: the clock is 1 MHz to 100 GHz "
       "(clock_ghz is in GHz)"},
      {{"kib: 256", "kib: 1099511627776"},
       "m.yaml:8:15: core.sram.kib: 1099511627776 is too large (at most 1048576)\n  hint: a core's SRAM is "
       "at "
       "most 1 GiB (kib: 1048576)"},
      {{"{rows: 32,", "{rows: 100000,"},
       "m.yaml:7:20: core.pe_array.rows: 100000 is too large (at most 1024)\n  hint: a PE array is at most "
       "1024 x 1024 PEs"},
      {{"mesh: {rows: 2", "mesh: {rows: 1000"},
       "m.yaml:3:14: mesh.rows: 1000 is too large (at most 64)\n  hint: a mesh is at most 64 x 64 cores "
       "(4096 "
       "cores, each its own set of simulated units)"},
  };
  for (const auto& [edit, message] : cases)
    EXPECT_EQ(std::string(parse_error(machine_with(edit.first, edit.second)).what()), message) << edit.second;
  EXPECT_EQ(parse_error(machine_with("bandwidth_gbps: 256", "bandwidth_gbps: 1e300")).message(),
            "1e+300 is too large (at most 1000000)");
  const InputError odd =
      parse_error(machine_with("bandwidth_gbps: 256", "bandwidth_gbps: 256, interleave_bytes: 48"));
  EXPECT_EQ(odd.field(), "dram.interleave_bytes");
  EXPECT_EQ(odd.message(), "48 B is not a power of two");
  EXPECT_EQ(
      parse_error(machine_with("bandwidth_gbps: 256", "bandwidth_gbps: 256, interleave_bytes: 3")).message(),
      "3 is too small (at least 16)");
}

TEST(ArchSpec, SramMustHoldAWholeNumberOfBankRows) {
  const InputError error = parse_error(machine_with("kib: 256, banks: 16", "kib: 1, banks: 3"));
  EXPECT_EQ(error.where().line, 8);
  EXPECT_EQ(error.where().column, 15);
  EXPECT_EQ(error.field(), "core.sram.kib");
  EXPECT_EQ(error.message(), "1 KiB is not a whole number of bank rows (3 banks x 64 B = 192 B)");
  EXPECT_EQ(error.hint(),
            "every bank holds the same number of words: make kib*1024 a multiple of banks*bank_width_bytes");
}

TEST(ArchSpec, UnknownDataflowIsRejectedWithDidYouMean) {
  EXPECT_EQ(
      std::string(parse_error(machine_with("cols: 32}", "cols: 32, dataflows: [os, wss]}")).what()),
      "m.yaml:7:50: core.pe_array.dataflows[1]: 'wss' is not one of ws, os, is or rs; did you mean 'ws'?"
      "\n  hint: names are case-sensitive; pick one of those listed");
}

TEST(ArchSpec, Int32IsNotAnOperandType) {
  EXPECT_EQ(parse_error(machine_with("cols: 32}", "cols: 32, dtypes: [int32]}")).message(),
            "'int32' is not one of fp32, bf16, fp16 or int8; did you mean 'int8'?");
}

TEST(ArchSpec, SubsetsOfDataflowsAndDtypesAreKeptInOrder) {
  const ArchSpec spec =
      parse(machine_with("cols: 32}", "cols: 32, dataflows: [os, is], dtypes: [int8, bf16]}"));
  EXPECT_EQ(spec.core.pe_array.dataflows, (std::vector<Dataflow>{Dataflow::os, Dataflow::is}));
  EXPECT_EQ(spec.core.pe_array.dtypes, (std::vector<DType>{DType::int8, DType::bf16}));
  EXPECT_FALSE(spec.core.pe_array.supports(Dataflow::ws));
  EXPECT_FALSE(spec.core.pe_array.supports(DType::fp32));
}

TEST(ArchSpec, NegativeLatencyIsRejected) {
  EXPECT_EQ(std::string(parse_error(machine_with("latency_cycles: 100", "latency_cycles: -5")).what()),
            "m.yaml:5:58: dram.latency_cycles: expected an integer >= 0, got -5"
            "\n  hint: this field is a count or an offset: 0 or more");
  EXPECT_EQ(parse_error(machine_with("{link_bytes_per_cycle: 64}",
                                     "{link_bytes_per_cycle: 64, router_latency_cycles: -1}"))
                .field(),
            "noc.router_latency_cycles");
  EXPECT_EQ(parse_error(machine_with("setup_cycles: 16", "setup_cycles: -16")).field(),
            "core.dma.setup_cycles");
  // Zero latency is a legal (ideal) component.
  EXPECT_EQ(parse(machine_with("latency_cycles: 100", "latency_cycles: 0")).dram.latency_cycles, 0);
}

TEST(ArchSpec, ZeroBandwidthAndClockAreRejected) {
  EXPECT_EQ(parse_error(machine_with("clock_ghz: 1.0", "clock_ghz: 0")).message(),
            "expected a positive number, got 0");
  EXPECT_EQ(parse_error(machine_with("{link_bytes_per_cycle: 64}", "{link_bytes_per_cycle: 0}")).field(),
            "noc.link_bytes_per_cycle");
  EXPECT_EQ(parse_error(machine_with("bandwidth_gbps: 256", "bandwidth_gbps: -1")).field(),
            "dram.bandwidth_gbps");
}

TEST(ArchSpec, UnknownKeyIsRejectedWithDidYouMean) {
  EXPECT_EQ(std::string(parse_error(machine_with("{link_bytes_per_cycle: 64}",
                                                 "{link_bytes_per_cycle: 64, multicats: false}"))
                            .what()),
            "m.yaml:4:33: noc.multicats: unknown key; did you mean 'multicast'?\n"
            "  hint: the README lists every field of this file");
  EXPECT_EQ(parse_error(machine_with("setup_cycles: 16}", "setup_cycles: 16, burst: 512}")).message(),
            "unknown key; did you mean 'burst_bytes'?");
}

TEST(ArchSpec, MisspelledRequiredKeyIsNamedAtTheTypo) {
  // A required key missing while an unread key one or two edits away (same first letter) is present: that key
  // is its misspelling, and the error points at it.
  const std::string message = parse_error(machine_with("clock_ghz: 1.0", "clock_mhz: 1000")).what();
  EXPECT_EQ(message.substr(0, message.find('\n')),
            "m.yaml:2:1: clock_mhz: unknown key; did you mean 'clock_ghz'?");
}

TEST(ArchSpec, AMissingRequiredKeyDoesNotBlameASiblingWithAnotherFirstLetter) {
  // rows is missing; cols is a real key two edits away, but it starts differently: rows is reported missing.
  const std::string message = parse_error(machine_with("mesh: {rows: 2, cols: 2}", "mesh: {cols: 2}")).what();
  EXPECT_NE(message.find("mesh.rows: required field is missing"), std::string::npos) << message;
}

TEST(ArchSpec, MissingSectionIsRequired) {
  EXPECT_EQ(std::string(parse_error(machine_with("noc: {link_bytes_per_cycle: 64}\n", "")).what()),
            "m.yaml:1:1: noc: required field is missing\n  hint: add 'noc:' to the top level");
}

TEST(ArchSpec, FoldOverlapIsNoneDrainOrFullAndTheOldSwitchStillReads) {
  auto overlap = [](const std::string& value) {
    return parse(machine_with("cols: 32}", "cols: 32, overlap_folds: " + value + "}"))
        .core.pe_array.overlap_folds;
  };
  EXPECT_EQ(overlap("none"), FoldOverlap::none);
  EXPECT_EQ(overlap("drain"), FoldOverlap::drain);
  EXPECT_EQ(overlap("full"), FoldOverlap::full);
  EXPECT_EQ(overlap("false"), FoldOverlap::none);
  EXPECT_EQ(overlap("true"), FoldOverlap::full);
  EXPECT_EQ(parse(kMachine).core.pe_array.overlap_folds, FoldOverlap::full);
  // The resolved form names the level.
  EXPECT_EQ(to_yaml(parse(machine_with(
                "cols: 32}", "cols: 32, overlap_folds: true}")))["core"]["pe_array"]["overlap_folds"]
                .as<std::string>(),
            "full");
  EXPECT_EQ(parse_error(machine_with("cols: 32}", "cols: 32, overlap_folds: partial}")).message(),
            "'partial' is not one of none, drain, full, false or true");
}

TEST(ArchSpec, DramPlacementIsAChoice) {
  EXPECT_EQ(parse(machine_with("latency_cycles: 100", "latency_cycles: 100, placement: west")).dram.placement,
            DramPlacement::west);
  EXPECT_EQ(
      parse_error(machine_with("latency_cycles: 100", "latency_cycles: 100, placement: east")).message(),
      "'east' is not one of perimeter or west; did you mean 'west'?");
}

TEST(ArchSpec, OverrideIsValidatedLikeTheFile) {
  config::Document document = config::load_text(kMachine, "m.yaml");
  config::apply_override(document, "core.sram.banks=3");
  EXPECT_EQ(
      std::string(input_error_of([&] { arch_from_yaml(document); }).what()),
      "m.yaml:8:15: core.sram.kib: 256 KiB is not a whole number of bank rows (3 banks x 64 B = 192 B)\n"
      "  hint: every bank holds the same number of words: make kib*1024 a multiple of "
      "banks*bank_width_bytes");
  config::Document ok = config::load_text(kMachine, "m.yaml");
  config::apply_override(ok, "core.sram.banks=8");
  EXPECT_EQ(arch_from_yaml(ok).core.sram.bank_row_bytes, 8 * 64);
}

// ---------------------------------------------------------------------------------------------------------
// The resolved form

TEST(ResolvedArch, RoundTripsToAnIdenticalSpec) {
  const ArchSpec spec = parse(
      machine_with("cols: 32}", "cols: 16, dataflows: [is, ws], dtypes: [fp16], overlap_folds: false}"));
  expect_same_machine(through_resolved_form(spec), spec);
  // And the text is a fixed point: resolving twice writes the same file.
  EXPECT_EQ(config::to_yaml_text(to_yaml(through_resolved_form(spec))), config::to_yaml_text(to_yaml(spec)));
}

TEST(ResolvedArch, FillsInEveryDefault) {
  const YAML::Node resolved = to_yaml(parse(kMachine));
  EXPECT_EQ(resolved["noc"]["router_latency_cycles"].as<int>(), 1);
  EXPECT_EQ(resolved["noc"]["multicast"].as<bool>(), true);
  EXPECT_EQ(resolved["dram"]["interleave_bytes"].as<int>(), 256);
  EXPECT_EQ(resolved["dram"]["placement"].as<std::string>(), "perimeter");
  EXPECT_EQ(resolved["core"]["pe_array"]["dataflows"].size(), 4u);
  EXPECT_EQ(resolved["core"]["pe_array"]["dtypes"][3].as<std::string>(), "int8");
  EXPECT_EQ(resolved["core"]["pe_array"]["overlap_folds"].as<std::string>(), "full");
  EXPECT_EQ(resolved["core"]["pe_register_bytes"].as<int>(), 64);
  // Row stationary's scratchpads default to half the register file for filters, a quarter each for the
  // input window and the partial sums.
  EXPECT_EQ(resolved["core"]["pe_spad_bytes"]["filter"].as<int>(), 32);
  EXPECT_EQ(resolved["core"]["pe_spad_bytes"]["ifmap"].as<int>(), 16);
  EXPECT_EQ(resolved["core"]["pe_spad_bytes"]["psum"].as<int>(), 16);
  EXPECT_EQ(resolved["core"]["dma"]["burst_bytes"].as<int>(), 256);
  EXPECT_EQ(resolved["core"]["dma"]["outstanding_bursts"].as<int>(), 64);
  EXPECT_EQ(resolved["energy_pj"]["mac"].as<double>(), 0.5);
  EXPECT_EQ(resolved["energy_pj"]["noc_byte_hop"].as<double>(), 0.3);
}

TEST(ResolvedArch, LeavesDerivedValuesOut) {
  // Derived values are recomputed on reading; written out, the strict reader would reject them as unknown
  // keys.
  const YAML::Node resolved = to_yaml(parse(kMachine));
  EXPECT_FALSE(resolved["dram"]["bytes_per_cycle"]);
  EXPECT_FALSE(resolved["dram"]["channel_bytes_per_cycle"]);
  EXPECT_FALSE(resolved["core"]["sram"]["bytes"]);
  EXPECT_FALSE(resolved["core"]["sram"]["bank_row_bytes"]);
}

TEST(ResolvedArch, KeepsAnInexactClockExactly) {
  // 0.7 GHz has no exact binary form; the resolved file must still read back as the same double.
  const ArchSpec spec = parse(machine_with("clock_ghz: 1.0", "clock_ghz: 0.7"));
  EXPECT_EQ(through_resolved_form(spec).clock_ghz, spec.clock_ghz);
  EXPECT_EQ(through_resolved_form(spec).dram.bytes_per_cycle, spec.dram.bytes_per_cycle);
}

TEST(Dataflow, NamesRoundTrip) {
  for (const std::string& name : dataflow_names()) EXPECT_EQ(name_of(parse_dataflow(name)), name);
}

}  // namespace
// ---------------------------------------------------------------------------------------------------------
// The vector unit

TEST(ArchSpec, AVectorUnitIsReadWithItsDerivedFieldsAndAbsentMeansNone) {
  EXPECT_FALSE(parse(kMachine).core.vector.has_value());
  const ArchSpec spec = parse(kMachine + "  vector: {lanes: 64, special_per_cycle: 16, latency_cycles: 6}\n");
  ASSERT_TRUE(spec.core.vector.has_value());
  EXPECT_EQ(spec.core.vector->lanes, 64);
  EXPECT_EQ(spec.core.vector->tree_depth, 6);            // log2(64)
  EXPECT_EQ(spec.core.vector->special_issue_cycles, 4);  // 64 / 16
  expect_same_machine(spec, through_resolved_form(spec));
}

TEST(ArchSpec, EveryShippedMachineHasAVectorUnit) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/configs/arch")) {
    const ArchSpec spec = arch_from_yaml(config::load_file(entry.path().string()));
    EXPECT_TRUE(spec.core.vector.has_value()) << entry.path();
  }
  EXPECT_EQ(arch_from_yaml(config::load_file(arch_config("tpu-v1.yaml"))).core.vector->lanes, 256);
}

TEST(ArchSpec, VectorUnitLimitsAreLocatedErrors) {
  const std::string line = "  vector: {lanes: 0, special_per_cycle: 1, latency_cycles: 6}\n";
  EXPECT_EQ(std::string(parse_error(kMachine + line).what()),
            "m.yaml:10:19: core.vector.lanes: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(
      std::string(
          parse_error(kMachine + "  vector: {lanes: 8, special_per_cycle: 9, latency_cycles: 6}\n").what()),
      "m.yaml:10:41: core.vector.special_per_cycle: must be in [1, lanes] = [1, 8], got 9\n"
      "  hint: docs/vector-unit.md gives each field's meaning and limits");
  const InputError missing = parse_error(kMachine + "  vector: {lanes: 8, special_per_cycle: 1}\n");
  EXPECT_EQ(missing.message(), "required field is missing");
  EXPECT_EQ(missing.field(), "core.vector.latency_cycles");
}

}  // namespace tessera::arch
