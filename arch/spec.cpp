#include "arch/spec.hpp"

#include "arch/noc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/text.hpp"

namespace tessera::arch {

namespace {

// How a field is given: required, or defaulting to the value its spec struct is initialised with (spec.hpp):
// each default is stated once, there.
enum class Given : uint8_t { required, optional };
enum class Rule : uint8_t { positive, nonnegative };

// A field's range beyond its rule, with the reason given to a user whose value is outside it: a value past
// any real machine is a typo or a unit mistake, and the model's arithmetic is not built for it.
struct Limit {
  double least = 0;  // inclusive; 0: the rule's bound alone
  double most = 0;   // inclusive
  const char* why = "";
};
constexpr Limit kNoLimit{0, 0, ""};

// An enumerated field's names, in the order messages list them.
template <class Enum>
using Names = std::vector<std::pair<std::string, Enum>>;

template <class Enum>
const std::string& name_in(const Names<Enum>& names, Enum value) {
  for (const auto& [name, option] : names)
    if (option == value) return name;
  TESSERA_ASSERT(false, "every value of an enumerated field has a name");
}

template <class Enum>
std::vector<std::string> names_of(const Names<Enum>& names) {
  std::vector<std::string> list;
  for (const auto& entry : names) list.push_back(entry.first);
  return list;
}

const Names<DramPlacement>& placement_names() {
  static const Names<DramPlacement> names = {{"perimeter", DramPlacement::perimeter},
                                             {"west", DramPlacement::west}};
  return names;
}
// `false` and `true` are the names the field had when it was a switch (none and full).
const Names<FoldOverlap>& fold_overlap_names() {
  static const Names<FoldOverlap> names = {{"none", FoldOverlap::none},
                                           {"drain", FoldOverlap::drain},
                                           {"full", FoldOverlap::full},
                                           {"false", FoldOverlap::none},
                                           {"true", FoldOverlap::full}};
  return names;
}
const Names<OutputStep>& output_step_options() {
  static const Names<OutputStep> names = [] {
    Names<OutputStep> list;
    for (ElementFn fn : element_fns(kInOutputPath)) list.emplace_back(name_of(fn), fn);
    return list;
  }();
  return names;
}
const Names<ChannelHash>& channel_hash_names() {
  static const Names<ChannelHash> names = {{"xor", ChannelHash::xor_fold}, {"none", ChannelHash::none}};
  return names;
}
const Names<Dataflow>& dataflow_options() {
  static const Names<Dataflow> names = [] {
    Names<Dataflow> list;
    for (const std::string& name : dataflow_names()) list.emplace_back(name, parse_dataflow(name));
    return list;
  }();
  return names;
}
const Names<DType>& operand_dtype_options() {
  static const Names<DType> names = [] {
    Names<DType> list;
    for (const std::string& name : operand_dtype_names()) list.emplace_back(name, *parse_dtype(name));
    return list;
  }();
  return names;
}

// The machine's fields, part by part, in the order the YAML lists them. `Fields` reads them (SpecReader) or
// writes the resolved form (SpecWriter), so what is read, its default and what is written are one list.
template <class Fields>
void mesh_fields(MeshSpec& mesh, Fields& f) {
  // Every core is its own set of SystemC units and its own routers.
  const Limit cores{1, 64,
                    "a mesh is at most 64 x 64 cores (4096 cores, each its own set of simulated units)"};
  f.integer("rows", mesh.rows, Rule::positive, Given::required, cores);
  f.integer("cols", mesh.cols, Rule::positive, Given::required, cores);
}

template <class Fields>
void noc_fields(NocSpec& noc, Fields& f) {
  f.text_choice("impl", noc.impl, noc_impl_names());
  f.number("link_bytes_per_cycle", noc.link_bytes_per_cycle, Rule::positive, Given::required,
           Limit{1.0 / 64, 65536, "a link carries 1/64 to 65536 bytes a cycle"});
  f.integer("router_latency_cycles", noc.router_latency_cycles, Rule::nonnegative, Given::optional);
  f.boolean("multicast", noc.multicast);
}

template <class Fields>
void dram_fields(DramSpec& dram, Fields& f) {
  f.number("bandwidth_gbps", dram.bandwidth_gbps, Rule::positive, Given::required,
           Limit{1e-3, 1e6, "DRAM bandwidth is 1 MB/s to 1 PB/s (bandwidth_gbps is in GB/s)"});
  f.integer("channels", dram.channels, Rule::positive, Given::required,
            Limit{1, 4096, "at most 4096 DRAM channels"});
  f.integer("latency_cycles", dram.latency_cycles, Rule::nonnegative, Given::required);
  f.integer("interleave_bytes", dram.interleave_bytes, Rule::positive, Given::optional,
            Limit{16, 1 << 20, "channels interleave in blocks of 16 B to 1 MiB"});
  if constexpr (Fields::kReads) {
    if ((dram.interleave_bytes & (dram.interleave_bytes - 1)) != 0)
      f.fail("interleave_bytes", fmt::format("{} B is not a power of two", dram.interleave_bytes),
             "DRAM channels interleave on address bits: 64, 128, 256, ... bytes");
  }
  f.choice("placement", dram.placement, placement_names());
  f.choice("channel_hash", dram.channel_hash, channel_hash_names());
  const auto rlc_fields = [](RlcSpec& rlc, Fields& r) {
    r.integer("run_bits", rlc.run_bits, Rule::positive, Given::required,
              Limit{1, 16, "a run field is 1 to 16 bits"});
    r.integer("pairs_per_word", rlc.pairs_per_word, Rule::positive, Given::required,
              Limit{1, 64, "a word holds 1 to 64 pairs"});
    r.integer("word_bytes", rlc.word_bytes, Rule::positive, Given::required,
              Limit{1, 64, "a word is 1 to 64 bytes"});
    if constexpr (Fields::kReads) {
      if (rlc.pairs_per_word * (rlc.run_bits + 8) > 8 * rlc.word_bytes)
        r.fail("pairs_per_word",
               fmt::format("{} pairs of a {}-bit run and a value do not fit a {}-byte word",
                           rlc.pairs_per_word, rlc.run_bits, rlc.word_bytes),
               "each pair takes run_bits plus the value's bits (8 for int8, 16 for bf16 or fp16)");
    }
  };
  if constexpr (Fields::kReads) {
    RlcSpec rlc;
    if (f.map_if_given("rlc", [&](Fields& r) { rlc_fields(rlc, r); })) dram.rlc = rlc;
  } else if (dram.rlc) {
    f.map("rlc", [&](Fields& r) { rlc_fields(*dram.rlc, r); });
  }
}

template <class Fields>
void pe_array_fields(PeArraySpec& pe, Fields& f) {
  const Limit side{1, 1024, "a PE array is at most 1024 x 1024 PEs"};
  f.integer("rows", pe.rows, Rule::positive, Given::required, side);
  f.integer("cols", pe.cols, Rule::positive, Given::required, side);
  f.choice_list("dataflows", pe.dataflows, dataflow_options());
  f.choice_list("dtypes", pe.dtypes, operand_dtype_options());
  f.choice("overlap_folds", pe.overlap_folds, fold_overlap_names());
  if (Fields::kReads || !pe.output_steps.empty())
    f.choice_list("output_steps", pe.output_steps, output_step_options());
}

template <class Fields>
void pe_spad_fields(PeSpadSpec& spad, Fields& f) {
  f.integer("filter", spad.filter_bytes, Rule::positive, Given::required);
  f.integer("ifmap", spad.ifmap_bytes, Rule::positive, Given::required);
  f.integer("psum", spad.psum_bytes, Rule::positive, Given::required);
}

template <class Fields>
void sram_fields(SramSpec& sram, Fields& f) {
  f.integer("kib", sram.kib, Rule::positive, Given::required,
            Limit{1, 1 << 20, "a core's SRAM is at most 1 GiB (kib: 1048576)"});
  f.integer("banks", sram.banks, Rule::positive, Given::required);
  f.integer("bank_width_bytes", sram.bank_width_bytes, Rule::positive, Given::required);
  if constexpr (Fields::kReads) {
    const int64_t bank_row = static_cast<int64_t>(sram.banks) * sram.bank_width_bytes;
    if ((sram.kib * 1024) % bank_row != 0) {
      f.fail("kib",
             fmt::format("{} KiB is not a whole number of bank rows ({} banks x {} B = {} B)", sram.kib,
                         sram.banks, sram.bank_width_bytes, bank_row),
             "every bank holds the same number of words: make kib*1024 a multiple of banks*bank_width_bytes");
    }
  }
}

template <class Fields>
void dma_fields(DmaSpec& dma, Fields& f) {
  f.integer("engines", dma.engines, Rule::positive, Given::required,
            Limit{1, 256, "at most 256 DMA engines a core"});
  f.number("bytes_per_cycle", dma.bytes_per_cycle, Rule::positive, Given::required,
           Limit{1.0 / 64, 65536, "a DMA engine moves 1/64 to 65536 bytes a cycle"});
  f.integer("setup_cycles", dma.setup_cycles, Rule::nonnegative, Given::required);
  f.integer("burst_bytes", dma.burst_bytes, Rule::positive, Given::optional);
  f.integer("outstanding_bursts", dma.outstanding_bursts, Rule::positive, Given::optional);
}

// The vector unit (docs/vector-unit.md): every field required, each shipped machine cites its numbers.
template <class Fields>
void vector_fields(VectorSpec& vector, Fields& f) {
  f.integer("lanes", vector.lanes, Rule::positive, Given::required);
  f.integer("special_per_cycle", vector.special_per_cycle, Rule::positive, Given::required);
  f.integer("latency_cycles", vector.latency_cycles, Rule::nonnegative, Given::required);
  if constexpr (Fields::kReads) {
    if (const std::optional<VectorSpecProblem> problem = vector_spec_problem(vector))
      f.fail(problem->field, problem->message, "docs/vector-unit.md gives each field's meaning and limits");
  }
}

template <class Fields>
void core_fields(CoreSpec& core, Fields& f) {
  f.map("pe_array", [&](Fields& pe) { pe_array_fields(core.pe_array, pe); });
  f.integer("pe_register_bytes", core.pe_register_bytes, Rule::positive, Given::optional);
  // Without pe_spad_bytes, the register file is split half / quarter / quarter (docs/pe-array-timing.md,
  // "RS").
  const bool spad_given = f.map_if_given("pe_spad_bytes", [&](Fields& spad) {
    pe_spad_fields(core.pe_spad, spad);
    if constexpr (Fields::kReads) {
      if (core.pe_spad.total() > core.pe_register_bytes) {
        f.fail("pe_spad_bytes",
               fmt::format("the scratchpads hold {} B, more than pe_register_bytes ({} B)",
                           core.pe_spad.total(), core.pe_register_bytes),
               "pe_register_bytes is the whole register file of a PE: raise it to at least the sum");
      }
    }
  });
  if (!spad_given) {
    core.pe_spad.filter_bytes = core.pe_register_bytes / 2;
    core.pe_spad.ifmap_bytes = core.pe_register_bytes / 4;
    core.pe_spad.psum_bytes = core.pe_register_bytes / 4;
  }
  f.map("sram", [&](Fields& sram) { sram_fields(core.sram, sram); });
  f.map("dma", [&](Fields& dma) { dma_fields(core.dma, dma); });
  if constexpr (Fields::kReads) {
    VectorSpec vector;
    if (f.map_if_given("vector", [&](Fields& unit) { vector_fields(vector, unit); })) core.vector = vector;
  } else if (core.vector) {
    f.map("vector", [&](Fields& unit) { vector_fields(*core.vector, unit); });
  }
}

template <class Fields>
void energy_fields(EnergySpec& energy, Fields& f) {
  f.number("mac", energy.mac, Rule::nonnegative, Given::optional);
  f.number("sram_byte", energy.sram_byte, Rule::nonnegative, Given::optional);
  f.number("dram_byte", energy.dram_byte, Rule::nonnegative, Given::optional);
  f.number("noc_byte_hop", energy.noc_byte_hop, Rule::nonnegative, Given::optional);
  f.number("core_cycle", energy.core_cycle, Rule::nonnegative, Given::optional);
}

template <class Fields>
void arch_fields(ArchSpec& spec, Fields& f) {
  f.text("name", spec.name);
  f.number("clock_ghz", spec.clock_ghz, Rule::positive, Given::required,
           Limit{1e-3, 100, "the clock is 1 MHz to 100 GHz (clock_ghz is in GHz)"});
  f.map("mesh", [&](Fields& mesh) { mesh_fields(spec.mesh, mesh); });
  f.map("noc", [&](Fields& noc) { noc_fields(spec.noc, noc); });
  f.map("dram", [&](Fields& dram) { dram_fields(spec.dram, dram); });
  f.map("core", [&](Fields& core) { core_fields(spec.core, core); });
  f.map_or_defaults("energy_pj", [&](Fields& energy) { energy_fields(spec.energy_pj, energy); });
}

// Reads the fields with the strict reader: each map's unknown keys are errors once its fields are read.
class SpecReader {
 public:
  static constexpr bool kReads = true;
  explicit SpecReader(config::MapReader reader) : reader_(std::move(reader)) {}

  void text(const std::string& key, std::string& value) { value = reader_.string(key); }
  void integer(const std::string& key, int& value, Rule rule, Given given, const Limit& limit = kNoLimit) {
    const int64_t read = read_integer(key, value, rule, given);
    // The spec holds counts and cycles as int: a larger value is the user's error, not a silent wrap (2^32 PE
    // rows would become 0).
    if (read > std::numeric_limits<int>::max())
      reader_.fail(key, fmt::format("{} is too large (at most {})", read, std::numeric_limits<int>::max()));
    check_limit(key, static_cast<double>(read), fmt::format("{}", read), limit);
    value = static_cast<int>(read);
  }
  void integer(const std::string& key, int64_t& value, Rule rule, Given given,
               const Limit& limit = kNoLimit) {
    value = read_integer(key, value, rule, given);
    check_limit(key, static_cast<double>(value), fmt::format("{}", value), limit);
  }
  void number(const std::string& key, double& value, Rule rule, Given given, const Limit& limit = kNoLimit) {
    read_number(key, value, rule, given);
    check_limit(key, value, fmt::format("{}", value), limit);
  }
  void boolean(const std::string& key, bool& value) { value = reader_.boolean(key, value); }
  void text_choice(const std::string& key, std::string& value, const std::vector<std::string>& names) {
    value = reader_.choice(key, names, value);
  }
  template <class Enum>
  void choice(const std::string& key, Enum& value, const Names<Enum>& names) {
    const std::string chosen = reader_.choice(key, names_of(names), name_in(names, value));
    for (const auto& [name, option] : names)
      if (name == chosen) value = option;
  }
  template <class Enum>
  void choice_list(const std::string& key, std::vector<Enum>& values, const Names<Enum>& names) {
    std::vector<std::string> fallback;
    for (Enum value : values) fallback.push_back(name_in(names, value));
    const std::vector<std::string> chosen = reader_.choice_list(key, names_of(names), fallback);
    values.clear();
    for (const std::string& name : chosen)
      for (const auto& [option_name, option] : names)
        if (option_name == name) values.push_back(option);
  }
  template <class Walk>
  void map(const std::string& key, Walk&& walk) {
    SpecReader inner(reader_.map(key));
    walk(inner);
    inner.reader_.finish();
  }
  // A mapping that may be left out, every field then taking its default.
  template <class Walk>
  void map_or_defaults(const std::string& key, Walk&& walk) {
    SpecReader inner(reader_.map_or_empty(key));
    walk(inner);
    inner.reader_.finish();
  }
  // A mapping walked only when given (its absence means something else); says whether it was.
  template <class Walk>
  bool map_if_given(const std::string& key, Walk&& walk) {
    if (!reader_.has(key)) return false;
    map(key, walk);
    return true;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message, const std::string& hint) const {
    reader_.fail(key, message, hint);
  }
  void finish() const { reader_.finish(); }

 private:
  int64_t read_integer(const std::string& key, int64_t current, Rule rule, Given given) {
    if (rule == Rule::positive)
      return given == Given::required ? reader_.positive_integer(key)
                                      : reader_.positive_integer(key, current);
    return given == Given::required ? reader_.nonnegative_integer(key)
                                    : reader_.nonnegative_integer(key, current);
  }

  void read_number(const std::string& key, double& value, Rule rule, Given given) {
    if (rule == Rule::nonnegative) {
      TESSERA_ASSERT(given == Given::optional, "non-negative numbers of the machine have defaults");
      value = reader_.nonnegative_number(key, value);
    } else {
      value = given == Given::required ? reader_.positive_number(key) : reader_.positive_number(key, value);
    }
  }

  void check_limit(const std::string& key, double value, const std::string& text, const Limit& limit) const {
    if (limit.most == 0) return;
    if (value < limit.least)
      reader_.fail(key, fmt::format("{} is too small (at least {})", text, limit.least), limit.why);
    if (value > limit.most)
      reader_.fail(key, fmt::format("{} is too large (at most {})", text, limit.most), limit.why);
  }

  config::MapReader reader_;
};

// Writes every field, defaults filled, as the resolved form.
class SpecWriter {
 public:
  static constexpr bool kReads = false;
  explicit SpecWriter(YAML::Node node) : node_(std::move(node)) {}

  void text(const std::string& key, std::string& value) { node_[key] = value; }
  void integer(const std::string& key, int& value, Rule, Given, const Limit& = kNoLimit) {
    node_[key] = value;
  }
  void integer(const std::string& key, int64_t& value, Rule, Given, const Limit& = kNoLimit) {
    node_[key] = value;
  }
  void number(const std::string& key, double& value, Rule, Given, const Limit& = kNoLimit) {
    node_[key] = value;
  }
  void boolean(const std::string& key, bool& value) { node_[key] = value; }
  void text_choice(const std::string& key, std::string& value, const std::vector<std::string>&) {
    node_[key] = value;
  }
  template <class Enum>
  void choice(const std::string& key, Enum& value, const Names<Enum>& names) {
    node_[key] = name_in(names, value);
  }
  template <class Enum>
  void choice_list(const std::string& key, std::vector<Enum>& values, const Names<Enum>& names) {
    YAML::Node list;
    for (Enum value : values) list.push_back(name_in(names, value));
    list.SetStyle(YAML::EmitterStyle::Flow);
    node_[key] = list;
  }
  template <class Walk>
  void map(const std::string& key, Walk&& walk) {
    SpecWriter inner(node_[key]);
    walk(inner);
  }
  template <class Walk>
  void map_or_defaults(const std::string& key, Walk&& walk) {
    map(key, walk);
  }
  template <class Walk>
  bool map_if_given(const std::string& key, Walk&& walk) {
    map(key, walk);
    return true;
  }
  [[noreturn]] void fail(const std::string&, const std::string&, const std::string&) const {
    TESSERA_ASSERT(false, "the resolved form is written from a valid spec");
  }

 private:
  YAML::Node node_;
};

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

const std::vector<std::string>& output_step_names() {
  return element_fn_names(kInOutputPath);
}

bool output_path_applies(const std::vector<OutputStep>& path, const std::vector<OutputStep>& steps) {
  auto next = path.begin();
  for (OutputStep step : steps) {
    next = std::find(next, path.end(), step);
    if (next == path.end()) return false;
    ++next;
  }
  return true;
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
  if (core.vector) core.vector->validate();
}

ArchSpec arch_from_yaml(const config::Document& document) {
  ArchSpec spec;
  SpecReader reader(config::MapReader(document.root, document, ""));
  arch_fields(spec, reader);
  reader.finish();
  spec.derive();
  return spec;
}

YAML::Node to_yaml(const ArchSpec& spec) {
  YAML::Node root(YAML::NodeType::Map);  // a node of its own, so that the writer's handle shares it
  ArchSpec copy = spec;                  // the walker takes the fields by reference; this one only reads them
  SpecWriter writer(root);
  arch_fields(copy, writer);
  return root;
}

}  // namespace tessera::arch
