#include "arch/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/text.hpp"

namespace tessera::arch {

namespace {

template <class Enum>
std::vector<Enum> parse_all(const std::vector<std::string>& names, Enum (*parse)(const std::string&)) {
  std::vector<Enum> values;
  for (const auto& name : names) values.push_back(parse(name));
  return values;
}

DType parse_operand_dtype(const std::string& name) {
  return *parse_dtype(name);
}

// The spec holds counts and cycles as int: a larger value is the user's error, not a silent wrap (2^32 PE
// rows would become 0).
int within_int(const config::MapReader& reader, const std::string& key, int64_t value) {
  if (value > std::numeric_limits<int>::max())
    reader.fail(key, fmt::format("{} is too large (at most {})", value, std::numeric_limits<int>::max()));
  return static_cast<int>(value);
}

int positive_int(config::MapReader& reader, const std::string& key) {
  return within_int(reader, key, reader.positive_integer(key));
}

int positive_int(config::MapReader& reader, const std::string& key, int fallback) {
  return within_int(reader, key, reader.positive_integer(key, fallback));
}

int nonnegative_int(config::MapReader& reader, const std::string& key) {
  return within_int(reader, key, reader.nonnegative_integer(key));
}

int nonnegative_int(config::MapReader& reader, const std::string& key, int fallback) {
  return within_int(reader, key, reader.nonnegative_integer(key, fallback));
}

MeshSpec mesh_from_yaml(config::MapReader reader) {
  MeshSpec mesh;
  mesh.rows = positive_int(reader, "rows");
  mesh.cols = positive_int(reader, "cols");
  reader.finish();
  return mesh;
}

NocSpec noc_from_yaml(config::MapReader reader) {
  NocSpec noc;
  noc.link_bytes_per_cycle = reader.positive_number("link_bytes_per_cycle");
  noc.router_latency_cycles = nonnegative_int(reader, "router_latency_cycles", 1);
  noc.multicast = reader.boolean("multicast", true);
  reader.finish();
  return noc;
}

DramSpec dram_from_yaml(config::MapReader reader) {
  DramSpec dram;
  dram.bandwidth_gbps = reader.positive_number("bandwidth_gbps");
  dram.channels = positive_int(reader, "channels");
  dram.latency_cycles = nonnegative_int(reader, "latency_cycles");
  dram.interleave_bytes = reader.positive_integer("interleave_bytes", 256);
  dram.placement = reader.choice("placement", {"perimeter", "west"}, "perimeter") == "west"
                       ? DramPlacement::west
                       : DramPlacement::perimeter;
  dram.channel_hash = reader.choice("channel_hash", {"xor", "none"}, "xor") == "none" ? ChannelHash::none
                                                                                      : ChannelHash::xor_fold;
  reader.finish();
  return dram;
}

PeArraySpec pe_array_from_yaml(config::MapReader reader) {
  PeArraySpec pe;
  pe.rows = positive_int(reader, "rows");
  pe.cols = positive_int(reader, "cols");
  pe.dataflows =
      parse_all(reader.choice_list("dataflows", dataflow_names(), dataflow_names()), &parse_dataflow);
  pe.dtypes = parse_all(reader.choice_list("dtypes", operand_dtype_names(), operand_dtype_names()),
                        &parse_operand_dtype);
  pe.overlap_folds = reader.boolean("overlap_folds", true);
  reader.finish();
  return pe;
}

SramSpec sram_from_yaml(config::MapReader reader) {
  SramSpec sram;
  sram.kib = reader.positive_integer("kib");
  sram.banks = positive_int(reader, "banks");
  sram.bank_width_bytes = positive_int(reader, "bank_width_bytes");
  const int64_t bank_row = static_cast<int64_t>(sram.banks) * sram.bank_width_bytes;
  if ((sram.kib * 1024) % bank_row != 0) {
    reader.fail(
        "kib",
        fmt::format("{} KiB is not a whole number of bank rows ({} banks x {} B = {} B)", sram.kib,
                    sram.banks, sram.bank_width_bytes, bank_row),
        "every bank holds the same number of words: make kib*1024 a multiple of banks*bank_width_bytes");
  }
  reader.finish();
  return sram;
}

DmaSpec dma_from_yaml(config::MapReader reader) {
  DmaSpec dma;
  dma.engines = positive_int(reader, "engines");
  dma.bytes_per_cycle = reader.positive_number("bytes_per_cycle");
  dma.setup_cycles = nonnegative_int(reader, "setup_cycles");
  dma.burst_bytes = reader.positive_integer("burst_bytes", 256);
  dma.outstanding_bursts = positive_int(reader, "outstanding_bursts", 64);
  reader.finish();
  return dma;
}

CoreSpec core_from_yaml(config::MapReader reader) {
  CoreSpec core;
  core.pe_array = pe_array_from_yaml(reader.map("pe_array"));
  core.pe_register_bytes = positive_int(reader, "pe_register_bytes", 64);
  if (reader.has("pe_spad_bytes")) {
    config::MapReader spad = reader.map("pe_spad_bytes");
    core.pe_spad.filter_bytes = spad.positive_integer("filter");
    core.pe_spad.ifmap_bytes = spad.positive_integer("ifmap");
    core.pe_spad.psum_bytes = spad.positive_integer("psum");
    if (core.pe_spad.total() > core.pe_register_bytes) {
      reader.fail("pe_spad_bytes",
                  fmt::format("the scratchpads hold {} B, more than pe_register_bytes ({} B)",
                              core.pe_spad.total(), core.pe_register_bytes),
                  "pe_register_bytes is the whole register file of a PE: raise it to at least the sum");
    }
    spad.finish();
  } else {
    core.pe_spad.filter_bytes = core.pe_register_bytes / 2;
    core.pe_spad.ifmap_bytes = core.pe_register_bytes / 4;
    core.pe_spad.psum_bytes = core.pe_register_bytes / 4;
  }
  core.sram = sram_from_yaml(reader.map("sram"));
  core.dma = dma_from_yaml(reader.map("dma"));
  reader.finish();
  return core;
}

EnergySpec energy_from_yaml(config::MapReader reader) {
  EnergySpec energy;
  energy.mac = reader.nonnegative_number("mac", energy.mac);
  energy.sram_byte = reader.nonnegative_number("sram_byte", energy.sram_byte);
  energy.dram_byte = reader.nonnegative_number("dram_byte", energy.dram_byte);
  energy.noc_byte_hop = reader.nonnegative_number("noc_byte_hop", energy.noc_byte_hop);
  reader.finish();
  return energy;
}

}  // namespace

const char* name_of(Dataflow dataflow) {
  switch (dataflow) {
    case Dataflow::ws:
      return "ws";
    case Dataflow::os:
      return "os";
    case Dataflow::is:
      return "is";
    case Dataflow::rs:
      return "rs";
  }
  return "?";
}

const std::vector<std::string>& dataflow_names() {
  static const std::vector<std::string> names = {"ws", "os", "is", "rs"};
  return names;
}

Dataflow parse_dataflow(const std::string& name) {
  if (name == "os") return Dataflow::os;
  if (name == "is") return Dataflow::is;
  if (name == "rs") return Dataflow::rs;
  TESSERA_ASSERT(name == "ws", "dataflow names are checked before parsing");
  return Dataflow::ws;
}

bool PeArraySpec::supports(Dataflow dataflow) const {
  return std::find(dataflows.begin(), dataflows.end(), dataflow) != dataflows.end();
}

bool PeArraySpec::supports(DType dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

void ArchSpec::derive() {
  dram.bytes_per_cycle = dram.bandwidth_gbps / clock_ghz;
  dram.channel_bytes_per_cycle = dram.bytes_per_cycle / dram.channels;
  core.sram.bytes = core.sram.kib * 1024;
  core.sram.bank_row_bytes = static_cast<int64_t>(core.sram.banks) * core.sram.bank_width_bytes;
}

ArchSpec arch_from_yaml(const config::Document& document) {
  config::MapReader top(document.root, document, "");
  ArchSpec spec;
  spec.name = top.string("name");
  spec.clock_ghz = top.positive_number("clock_ghz");
  spec.mesh = mesh_from_yaml(top.map("mesh"));
  spec.noc = noc_from_yaml(top.map("noc"));
  spec.dram = dram_from_yaml(top.map("dram"));
  spec.core = core_from_yaml(top.map("core"));
  spec.energy_pj = energy_from_yaml(top.map_or_empty("energy_pj"));
  top.finish();
  spec.derive();
  return spec;
}

YAML::Node to_yaml(const ArchSpec& spec) {
  auto flow_list = [](const auto& values) {
    YAML::Node list;
    for (const auto& value : values) list.push_back(name_of(value));
    list.SetStyle(YAML::EmitterStyle::Flow);
    return list;
  };
  YAML::Node root;
  root["name"] = spec.name;
  root["clock_ghz"] = spec.clock_ghz;
  root["mesh"]["rows"] = spec.mesh.rows;
  root["mesh"]["cols"] = spec.mesh.cols;
  root["noc"]["link_bytes_per_cycle"] = spec.noc.link_bytes_per_cycle;
  root["noc"]["router_latency_cycles"] = spec.noc.router_latency_cycles;
  root["noc"]["multicast"] = spec.noc.multicast;
  root["dram"]["bandwidth_gbps"] = spec.dram.bandwidth_gbps;
  root["dram"]["channels"] = spec.dram.channels;
  root["dram"]["latency_cycles"] = spec.dram.latency_cycles;
  root["dram"]["interleave_bytes"] = spec.dram.interleave_bytes;
  root["dram"]["placement"] = spec.dram.placement == DramPlacement::west ? "west" : "perimeter";
  root["dram"]["channel_hash"] = spec.dram.channel_hash == ChannelHash::none ? "none" : "xor";
  YAML::Node core = root["core"];
  core["pe_array"]["rows"] = spec.core.pe_array.rows;
  core["pe_array"]["cols"] = spec.core.pe_array.cols;
  core["pe_array"]["dataflows"] = flow_list(spec.core.pe_array.dataflows);
  core["pe_array"]["dtypes"] = flow_list(spec.core.pe_array.dtypes);
  core["pe_array"]["overlap_folds"] = spec.core.pe_array.overlap_folds;
  core["pe_register_bytes"] = spec.core.pe_register_bytes;
  core["pe_spad_bytes"]["filter"] = spec.core.pe_spad.filter_bytes;
  core["pe_spad_bytes"]["ifmap"] = spec.core.pe_spad.ifmap_bytes;
  core["pe_spad_bytes"]["psum"] = spec.core.pe_spad.psum_bytes;
  core["sram"]["kib"] = spec.core.sram.kib;
  core["sram"]["banks"] = spec.core.sram.banks;
  core["sram"]["bank_width_bytes"] = spec.core.sram.bank_width_bytes;
  core["dma"]["engines"] = spec.core.dma.engines;
  core["dma"]["bytes_per_cycle"] = spec.core.dma.bytes_per_cycle;
  core["dma"]["setup_cycles"] = spec.core.dma.setup_cycles;
  core["dma"]["burst_bytes"] = spec.core.dma.burst_bytes;
  core["dma"]["outstanding_bursts"] = spec.core.dma.outstanding_bursts;
  root["energy_pj"]["mac"] = spec.energy_pj.mac;
  root["energy_pj"]["sram_byte"] = spec.energy_pj.sram_byte;
  root["energy_pj"]["dram_byte"] = spec.energy_pj.dram_byte;
  root["energy_pj"]["noc_byte_hop"] = spec.energy_pj.noc_byte_hop;
  return root;
}

}  // namespace tessera::arch
