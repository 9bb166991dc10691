#include "mapper/lower_gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "mapper/buffers.hpp"
#include "mapper/cost_model.hpp"
#include "mapper/problem.hpp"
#include "ops/input_generator.hpp"
#include "ops/kinds/conv2d.hpp"

namespace tessera::mapper {

namespace {

constexpr int kA = 0, kW = 1, kO = 2;  // the GEMM operands

// The text form's pitch: 0 when the rows are packed.
int64_t pitch_unless_packed(int64_t pitch, int64_t row_bytes) {
  return pitch == row_bytes ? 0 : pitch;
}

struct Iteration {
  int64_t m_tile, n_tile, k_tile;  // global tile indices
  int64_t group;                   // of a grouped convolution; 0 otherwise
};

// A core's place in the logical (m, n, k) grid of cores and its tile ranges.
struct CorePlace {
  int im = 0, in = 0, ik = 0;
  int index = 0;  // core index in the mesh
  std::vector<Iteration> iterations;
};

int logical_to_core(int im, int in, int ik, const GemmMapping& mapping) {
  return (ik * mapping.split_m + im) * mapping.split_n + in;
}

// A core's iterations: each group in turn (the outermost loop), its tiles in the mapping's loop order.
std::vector<Iteration> iterations_of(const GemmMapping& mapping, const DimPartition (&parts)[3],
                                     const int (&place)[3], int64_t groups) {
  int64_t first[3], count[3];
  for (int d = 0; d < 3; ++d) {
    first[d] = parts[d].first_tile(place[d]);
    count[d] = parts[d].tile_count(place[d]);
  }
  std::vector<Iteration> iterations;
  const int outer = static_cast<int>(mapping.order[0]), middle = static_cast<int>(mapping.order[1]),
            inner = static_cast<int>(mapping.order[2]);
  int64_t index[3];
  for (int64_t group = 0; group < groups; ++group)
    for (int64_t a = 0; a < count[outer]; ++a)
      for (int64_t b = 0; b < count[middle]; ++b)
        for (int64_t c = 0; c < count[inner]; ++c) {
          index[outer] = first[outer] + a;
          index[middle] = first[middle] + b;
          index[inner] = first[inner] + c;
          iterations.push_back(Iteration{index[0], index[1], index[2], group});
        }
  return iterations;
}

// One run of consecutive iterations over which a core keeps the same tile of an operand.
struct Residency {
  int64_t key_a = 0, key_b = 0;  // the tile (rows tile, cols tile)
  int64_t group = 0;
  size_t first = 0, last = 0;  // iterations
};

std::vector<Residency> residencies(const std::vector<Iteration>& iterations, int tensor) {
  std::vector<Residency> runs;
  for (size_t i = 0; i < iterations.size(); ++i) {
    const Iteration& it = iterations[i];
    const int64_t a = tensor == kW ? it.k_tile : it.m_tile;
    const int64_t b = tensor == kA ? it.k_tile : it.n_tile;
    if (runs.empty() || runs.back().key_a != a || runs.back().key_b != b || runs.back().group != it.group)
      runs.push_back(Residency{a, b, it.group, i, i});
    runs.back().last = i;
  }
  return runs;
}

// An instruction with the key that orders it among its core's instructions (the iteration it belongs to).
struct Keyed {
  double key;
  int order;  // tie-break: creation order
  arch::Instruction instruction;
};

class Lowering {
 public:
  Lowering(const ops::Op& op, uint64_t seed, const GemmMapping& mapping, const arch::ArchSpec& spec)
      : op_(op), seed_(seed), mapping_(mapping), spec_(spec) {
    problem_ = problem_for(op, mapping);
    parts_[0] = DimPartition(problem_.m, mapping.tile_m, mapping.split_m);
    parts_[1] = DimPartition(problem_.n, mapping.tile_n, mapping.split_n);
    parts_[2] = DimPartition(problem_.k, mapping.tile_k, mapping.split_k);
    plan_ = plan_buffers(problem_, mapping, spec);
    const GemmCost cost = CostModel(spec).evaluate(problem_, mapping);
    multicast_[kA] = cost.multicast_a;
    multicast_[kW] = cost.multicast_w;
    element_ = size_bytes(op.dtype);
    accumulator_type_ = accumulator_of(op.dtype);
    // A direct conv's W tile with some of the channels is one load per filter tap (its rows are not
    // contiguous in W), with all of them a single load.
    w_whole_channels_ = !problem_.direct || mapping.tile_k >= problem_.k;
    w_loads_per_tile_ = w_whole_channels_ ? 1 : static_cast<int>(problem_.taps());
  }

  arch::Program run(const std::string& name) {
    declare(name);
    for (int ik = 0; ik < mapping_.split_k; ++ik)
      for (int im = 0; im < mapping_.split_m; ++im)
        for (int in = 0; in < mapping_.split_n; ++in) {
          CorePlace place;
          place.im = im, place.in = in, place.ik = ik;
          place.index = logical_to_core(im, in, ik, mapping_);
          const int coords[3] = {im, in, ik};
          place.iterations = iterations_of(mapping_, parts_, coords, problem_.groups);
          places_.push_back(std::move(place));
        }
    keyed_.resize(places_.size());
    // Operands first: every core's PE waits and frees depend on its issuer's loads.
    for (size_t p = 0; p < places_.size(); ++p) {
      lower_operand(p, kA);
      lower_operand(p, kW);
    }
    for (size_t p = 0; p < places_.size(); ++p) lower_compute_and_output(p);
    for (size_t p = 0; p < places_.size(); ++p) {
      auto& list = keyed_[p];
      std::stable_sort(list.begin(), list.end(), [](const Keyed& a, const Keyed& b) {
        return a.key != b.key ? a.key < b.key : a.order < b.order;
      });
      arch::CoreProgram core;
      core.coord = arch::core_coord(places_[p].index, spec_.mesh);
      for (Keyed& keyed : list) core.instructions.push_back(std::move(keyed.instruction));
      program_.cores.push_back(std::move(core));
    }
    std::sort(program_.cores.begin(), program_.cores.end(),
              [](const arch::CoreProgram& a, const arch::CoreProgram& b) { return a.coord < b.coord; });
    program_.number_semaphores_by_appearance();
    return std::move(program_);
  }

 private:
  // The op line names the op's workload entry; the tensors are the op's (input_generator.hpp fixes their
  // ids). A convolution's A is the im2col view of its input X; with packed groups its W operand is the
  // block-diagonal view of W.
  void declare(const std::string& name) {
    program_.name = name;
    program_.mesh = spec_.mesh;
    arch::OpBinding binding;
    binding.kind = op_.kind_name();
    for (const auto& [key, value] : ops::entry_of(op_))
      if (key != "kind") binding.attributes[key] = value;
    binding.attributes["index"] = std::to_string(op_.index);
    binding.attributes["seed"] = std::to_string(seed_);
    program_.op = binding;
    // Tensors one after another in DRAM, each starting on a 1 MiB boundary (a multiple of any interleave).
    constexpr uint64_t kAlignment = 1 << 20;
    uint64_t address = 0;
    auto add = [&](arch::TensorDecl tensor) {
      tensor.dram_address = tensor.role == arch::TensorRole::view ? 0 : address;
      address += (static_cast<uint64_t>(tensor.size_in_bytes()) + kAlignment - 1) / kAlignment * kAlignment;
      program_.tensors.push_back(std::move(tensor));
      return static_cast<int>(program_.tensors.size() - 1);
    };
    const std::vector<ops::TensorDesc> tensors = ops::tensors_of(op_);
    auto declared = [&](const ops::TensorDesc& desc) {
      arch::TensorDecl tensor;
      tensor.name = desc.name;
      tensor.dtype = desc.dtype;
      tensor.rows = desc.rows;
      tensor.cols = desc.cols;
      tensor.role = desc.is_output ? arch::TensorRole::output : arch::TensorRole::input;
      if (!desc.is_output) tensor.seed = seed_, tensor.generator_id = desc.tensor_id;
      return tensor;
    };
    const auto* conv = op_.as<ops::ConvShape>();
    if (conv && !problem_.direct) {
      const int x = add(declared(tensors[0]));
      arch::TensorDecl view;
      view.name = "A";
      view.dtype = op_.dtype;
      view.role = arch::TensorRole::view;
      // Packed groups: the view has groups/packed groups of packed*c/groups channels each.
      view.im2col =
          arch::Im2colView{x,       conv->n,      conv->h,   conv->w,        conv->c,        conv->r,
                           conv->s, conv->stride, conv->pad, conv->dilation, problem_.groups};
      view.rows = view.im2col->rows();
      view.cols = view.im2col->cols();
      tensor_[kA] = add(view);
    } else {
      tensor_[kA] = add(declared(tensors[0]));
    }
    tensor_[kW] = add(declared(tensors[1]));
    if (problem_.packed > 1) {
      // The packed groups' weights as one block-diagonal operand over W.
      const ops::ConvShape& conv = *op_.as<ops::ConvShape>();
      arch::TensorDecl view;
      view.name = "Wb";
      view.dtype = op_.dtype;
      view.role = arch::TensorRole::view;
      view.block_diagonal = arch::BlockDiagonalView{tensor_[kW],     conv.groups,    problem_.packed,
                                                    conv.r * conv.s, conv.group_c(), conv.group_k()};
      view.rows = view.block_diagonal->rows();
      view.cols = view.block_diagonal->cols();
      tensor_[kW] = add(view);
    }
    tensor_[kO] = add(declared(tensors[2]));
  }

  // Where a tile of the GEMM of group g lies in the op's tensors: A's columns and W's rows are the group's
  // r*s*c/groups taps, O's columns its k/groups filters.
  int64_t column_offset(int tensor, int64_t group) const {
    return tensor == kA ? group * problem_.k : tensor == kO ? group * problem_.n : 0;
  }
  int64_t row_offset(int tensor, int64_t group) const { return tensor == kW ? group * problem_.k : 0; }

  // A direct conv's outer loop runs images x conv groups.
  int64_t image_of(int64_t group) const { return group / problem_.direct->conv_groups; }
  int64_t conv_group_of(int64_t group) const { return group % problem_.direct->conv_groups; }

  // The input rows [first, end) a direct conv's tile of output rows reads (padding rows are not read), and
  // how many padding rows lie above the first.
  struct InputRows {
    int64_t first = 0, end = 0, pad_top = 0;
  };
  InputRows input_rows_of(int64_t m_tile) const {
    const DirectConv& d = *problem_.direct;
    const int64_t p0 = parts_[0].tile_begin(m_tile), rows = parts_[0].tile_size(m_tile);
    const int64_t top = p0 * d.stride - d.pad;
    InputRows in;
    in.first = std::clamp<int64_t>(top, 0, d.h - 1);
    in.end = std::min(d.h, (p0 + rows - 1) * d.stride - d.pad + (d.r - 1) * d.dilation + 1);
    in.end = std::max(in.end, in.first + 1);  // a tile wholly in the padding still loads (and ignores) a row
    in.pad_top = in.first - top;
    return in;
  }

  // The loads of one tile of A or W: (region, SRAM offset within the buffer).
  std::vector<std::pair<arch::TensorRegion, uint64_t>> tile_loads(int tensor, const Residency& load) const {
    const DimPartition& rows = parts_[tensor == kA ? 0 : 2];
    const DimPartition& cols = parts_[tensor == kA ? 2 : 1];
    if (!problem_.direct) {
      return {
          {arch::TensorRegion{tensor_[tensor], row_offset(tensor, load.group) + rows.tile_begin(load.key_a),
                              rows.tile_size(load.key_a),
                              column_offset(tensor, load.group) + cols.tile_begin(load.key_b),
                              cols.tile_size(load.key_b)},
           0}};
    }
    const DirectConv& d = *problem_.direct;
    const int64_t image = image_of(load.group), group = conv_group_of(load.group);
    if (tensor == kA) {
      // The input tile: whole rows of the image (every pixel, the halo rows included), the tile's channels.
      const InputRows in = input_rows_of(load.key_a);
      return {
          {arch::TensorRegion{tensor_[kA], (image * d.h + in.first) * d.w, (in.end - in.first) * d.w,
                              group * problem_.k + cols.tile_begin(load.key_b), cols.tile_size(load.key_b)},
           0}};
    }
    // The filter tile: for each tap the tile's channels, rows in (tap, channel) order.
    const int64_t channels = rows.tile_size(load.key_a);
    const int64_t filters_begin = cols.tile_begin(load.key_b), filters = cols.tile_size(load.key_b);
    const int64_t group_rows = group * d.taps() * problem_.k;
    if (w_whole_channels_)
      return {{arch::TensorRegion{tensor_[kW], group_rows, d.taps() * channels, filters_begin, filters}, 0}};
    std::vector<std::pair<arch::TensorRegion, uint64_t>> loads;
    for (int64_t tap = 0; tap < d.taps(); ++tap)
      loads.push_back(
          {arch::TensorRegion{tensor_[kW], group_rows + tap * problem_.k + rows.tile_begin(load.key_a),
                              channels, filters_begin, filters},
           static_cast<uint64_t>(tap * channels * plan_.w_row_bytes)});
    return loads;
  }

  arch::SemaphoreRef semaphore(const std::string& name, int buffer, int core = arch::kSameCore) {
    return arch::SemaphoreRef{program_.semaphore_id(fmt::format("{}[{}]", name, buffer)), core};
  }

  void emit(size_t place, double key, arch::QueueId queue, arch::Operation operation,
            std::vector<arch::SemaphoreWait> waits, std::vector<arch::SemaphoreRef> signals) {
    arch::Instruction instruction;
    instruction.queue = queue;
    instruction.operation = std::move(operation);
    instruction.waits = std::move(waits);
    instruction.signals = std::move(signals);
    keyed_[place].push_back(Keyed{key, order_++, std::move(instruction)});
  }

  // The core that issues the loads of `tensor` for the core at `place`: the first core of its sharing group
  // when the tensor is multicast, else the core itself.
  size_t issuer_of(size_t place, int tensor) const {
    if (!multicast_[tensor]) return place;
    const CorePlace& core = places_[place];
    const int issuer = tensor == kA ? logical_to_core(core.im, 0, core.ik, mapping_)
                                    : logical_to_core(0, core.in, core.ik, mapping_);
    for (size_t p = 0; p < places_.size(); ++p)
      if (places_[p].index == issuer) return p;
    return place;
  }

  std::vector<size_t> group_of(size_t issuer, int tensor) const {
    if (!multicast_[tensor]) return {issuer};
    std::vector<size_t> members;
    for (size_t p = 0; p < places_.size(); ++p)
      if (issuer_of(p, tensor) == issuer) members.push_back(p);
    return members;
  }

  int load_engine(int tensor) const {
    if (spec_.core.dma.engines < 2) return 0;
    return tensor == kA ? 0 : 1;
  }

  // Loads of A or W for the core at `place`, if it issues them, and the PE-side waits and frees are recorded
  // for every core of the group.
  void lower_operand(size_t place, int tensor) {
    if (issuer_of(place, tensor) != place) return;
    const std::vector<size_t> members = group_of(place, tensor);
    const std::vector<Residency> loads = residencies(places_[place].iterations, tensor);
    const int buffers = tensor == kA ? plan_.a_count : plan_.w_count;
    const char* full = tensor == kA ? "a_full" : "w_full";
    const char* free_name = tensor == kA ? "a_free" : "w_free";
    const int issuer_core = places_[place].index;
    std::vector<int> destinations;
    for (size_t member : members) destinations.push_back(places_[member].index);
    for (size_t j = 0; j < loads.size(); ++j) {
      const int buffer = static_cast<int>(j % buffers);
      const Residency& load = loads[j];
      bool first_piece = true;
      for (const auto& [region, offset] : tile_loads(tensor, load)) {
        arch::DmaLoad operation;
        operation.source = region;
        operation.sram_address = (tensor == kA ? plan_.a_address(buffer) : plan_.w_address(buffer)) + offset;
        const int64_t pitch = tensor == kA ? plan_.a_row_bytes : plan_.w_row_bytes;
        operation.sram_pitch_bytes = pitch_unless_packed(pitch, operation.source.cols * element_);
        if (members.size() > 1) operation.destinations = destinations;
        std::vector<arch::SemaphoreWait> waits;
        if (j >= static_cast<size_t>(buffers) && first_piece)
          waits.push_back(
              arch::SemaphoreWait{semaphore(free_name, buffer), static_cast<int>(members.size())});
        first_piece = false;
        // A load may run as far ahead as its buffer allows: key it just before the iteration `buffers - 1`
        // earlier.
        const double key = static_cast<double>(load.first) - (buffers - 1) - 0.5;
        emit(place, key, arch::QueueId{arch::QueueKind::dma, load_engine(tensor)}, operation,
             std::move(waits), {semaphore(full, buffer)});
      }
      // Every member's PE waits for this load at its first use and frees the buffer after its last use, when
      // a later load will reuse it.
      for (size_t member : members) {
        const std::vector<Residency>& member_loads = member_residencies(member, tensor);
        const Residency& use = member_loads[j];
        first_use_[tensor][member].emplace(use.first, buffer);
        if (j + buffers < loads.size())
          last_use_[tensor][member].emplace(
              use.last, semaphore(free_name, buffer, member == place ? arch::kSameCore : issuer_core));
      }
    }
  }

  const std::vector<Residency>& member_residencies(size_t member, int tensor) {
    auto& cache = residency_cache_[tensor];
    auto found = cache.find(member);
    if (found == cache.end())
      found = cache.emplace(member, residencies(places_[member].iterations, tensor)).first;
    return found->second;
  }

  void lower_compute_and_output(size_t place) {
    const CorePlace& core = places_[place];
    const std::vector<Residency> outputs = residencies(core.iterations, kO);
    const bool k_split = mapping_.split_k > 1;
    const bool root = core.ik == 0;
    const int store_engine = spec_.core.dma.engines < 2 ? 0 : (a_bytes_at_most_w(place) ? 0 : 1);
    std::map<std::tuple<int64_t, int64_t, int64_t>, int>
        visits;  // O tile -> residencies so far (revisits add)
    for (size_t r = 0; r < outputs.size(); ++r) {
      const Residency& output = outputs[r];
      const int buffer = static_cast<int>(r % plan_.o_count);
      const bool reuses_buffer = r >= static_cast<size_t>(plan_.o_count);
      const bool buffer_reused_later = r + plan_.o_count < outputs.size();
      for (size_t i = output.first; i <= output.last; ++i) {
        const Iteration& it = core.iterations[i];
        const int a_buffer = current_buffer(kA, place, i), w_buffer = current_buffer(kW, place, i);
        arch::Operation operation =
            problem_.direct ? arch::Operation(direct_conv(it, a_buffer, w_buffer, buffer, i != output.first))
                            : arch::Operation(matmul_of(it, a_buffer, w_buffer, buffer, i != output.first));
        std::vector<arch::SemaphoreWait> waits;
        std::vector<arch::SemaphoreRef> signals;
        if (i == output.first && reuses_buffer) waits.push_back({semaphore("o_free", buffer), 1});
        for (int tensor : {kA, kW}) {
          auto first = first_use_[tensor][place].find(i);
          if (first != first_use_[tensor][place].end())
            waits.push_back({semaphore(tensor == kA ? "a_full" : "w_full", first->second),
                             tensor == kW ? w_loads_per_tile_ : 1});
          auto last = last_use_[tensor][place].find(i);
          if (last != last_use_[tensor][place].end()) signals.push_back(last->second);
        }
        if (i == output.last) {
          signals.push_back(semaphore("o_done", buffer));
          if (k_split && root)
            for (const CorePlace& sender : places_)
              if (sender.im == core.im && sender.in == core.in && sender.ik != 0)
                signals.push_back(semaphore("rdy", buffer, sender.index));
        }
        emit(place, static_cast<double>(i), arch::QueueId{arch::QueueKind::pe, 0}, std::move(operation),
             std::move(waits), std::move(signals));
      }
      const Iteration& last = core.iterations[output.last];
      const int64_t rows = parts_[0].tile_size(last.m_tile) * problem_.m_pixels(),
                    cols = parts_[1].tile_size(last.n_tile);
      const int64_t row_bytes = cols * size_bytes(accumulator_type_);
      const int64_t pitch = pitch_unless_packed(plan_.o_row_bytes, row_bytes);
      const double key = static_cast<double>(output.last) + 0.5;
      if (k_split && !root) {
        arch::NocSend send;
        send.source_address = plan_.o_address(buffer);
        send.source_pitch_bytes = pitch;
        send.rows = rows;
        send.row_bytes = row_bytes;
        send.destination_core = logical_to_core(core.im, core.in, 0, mapping_);
        send.destination_address = plan_.o_address(buffer);
        send.destination_pitch_bytes = pitch;
        send.accumulate = true;
        send.accumulate_dtype = accumulator_type_;
        std::vector<arch::SemaphoreRef> signals = {semaphore("psum", buffer, send.destination_core)};
        if (buffer_reused_later) signals.push_back(semaphore("o_free", buffer));
        emit(place, key, arch::QueueId{arch::QueueKind::noc, 0}, send,
             {{semaphore("o_done", buffer), 1}, {semaphore("rdy", buffer), 1}}, std::move(signals));
        continue;
      }
      arch::DmaStore store;
      store.sram_address = plan_.o_address(buffer);
      store.sram_pitch_bytes = pitch;
      store.destination = output_region(last, rows, cols);
      // The first residency of an output tile writes it; a later one adds its partial sums to it.
      store.accumulate = visits[{last.group, last.m_tile, last.n_tile}]++ > 0;
      std::vector<arch::SemaphoreWait> waits = {{semaphore("o_done", buffer), 1}};
      if (k_split) waits.push_back({semaphore("psum", buffer), mapping_.split_k - 1});
      std::vector<arch::SemaphoreRef> signals;
      if (buffer_reused_later) signals.push_back(semaphore("o_free", buffer));
      emit(place, key, arch::QueueId{arch::QueueKind::dma, store_engine}, store, std::move(waits),
           std::move(signals));
    }
  }

  // What a matmul and a conv instruction share: dataflow, dtype, the buffers, their pitches (A rows of
  // `a_elements`, W and O rows of `w_elements`) and accumulation.
  template <class PeInstruction>
  void place_operands(PeInstruction& instruction, int a_buffer, int w_buffer, int o_buffer,
                      int64_t a_elements, int64_t w_elements, bool accumulate) const {
    instruction.dataflow = mapping_.dataflow;
    instruction.dtype = op_.dtype;
    instruction.a_address = plan_.a_address(a_buffer);
    instruction.w_address = plan_.w_address(w_buffer);
    instruction.o_address = plan_.o_address(o_buffer);
    instruction.a_pitch_bytes = pitch_unless_packed(plan_.a_row_bytes, a_elements * element_);
    instruction.w_pitch_bytes = pitch_unless_packed(plan_.w_row_bytes, w_elements * element_);
    instruction.o_pitch_bytes =
        pitch_unless_packed(plan_.o_row_bytes, w_elements * size_bytes(accumulator_type_));
    instruction.accumulate = accumulate;
  }

  arch::PeMatmul matmul_of(const Iteration& it, int a_buffer, int w_buffer, int o_buffer,
                           bool accumulate) const {
    arch::PeMatmul matmul;
    matmul.m = parts_[0].tile_size(it.m_tile);
    matmul.n = parts_[1].tile_size(it.n_tile);
    matmul.k = parts_[2].tile_size(it.k_tile);
    place_operands(matmul, a_buffer, w_buffer, o_buffer, matmul.k, matmul.n, accumulate);
    return matmul;
  }

  arch::PeConv direct_conv(const Iteration& it, int a_buffer, int w_buffer, int o_buffer,
                           bool accumulate) const {
    const DirectConv& d = *problem_.direct;
    const InputRows in = input_rows_of(it.m_tile);
    arch::PeConv conv;
    conv.e = parts_[0].tile_size(it.m_tile);
    conv.q = d.q;
    conv.m = parts_[1].tile_size(it.n_tile);
    conv.c = parts_[2].tile_size(it.k_tile);
    conv.ih = in.end - in.first;
    conv.iw = d.w;
    conv.r = d.r, conv.s = d.s, conv.stride = d.stride, conv.dilation = d.dilation;
    conv.pad_top = in.pad_top;
    conv.pad_left = d.pad;
    place_operands(conv, a_buffer, w_buffer, o_buffer, conv.c, conv.m, accumulate);
    return conv;
  }

  // Where an output tile of `rows` x `cols` goes in O (a direct conv's rows are the tile's output pixels).
  arch::TensorRegion output_region(const Iteration& it, int64_t rows, int64_t cols) const {
    if (!problem_.direct)
      return arch::TensorRegion{tensor_[kO], parts_[0].tile_begin(it.m_tile), rows,
                                column_offset(kO, it.group) + parts_[1].tile_begin(it.n_tile), cols};
    const DirectConv& d = *problem_.direct;
    return arch::TensorRegion{tensor_[kO], (image_of(it.group) * d.p + parts_[0].tile_begin(it.m_tile)) * d.q,
                              rows, conv_group_of(it.group) * problem_.n + parts_[1].tile_begin(it.n_tile),
                              cols};
  }

  // The buffer holding the tile of `tensor` that iteration `i` of the core at `place` uses.
  int current_buffer(int tensor, size_t place, size_t i) {
    const std::vector<Residency>& loads = member_residencies(place, tensor);
    const int buffers = tensor == kA ? plan_.a_count : plan_.w_count;
    auto it = std::upper_bound(loads.begin(), loads.end(), i,
                               [](size_t value, const Residency& load) { return value < load.first; });
    return static_cast<int>((it - loads.begin() - 1) % buffers);
  }

  // Stores go with the DMA engine that loads fewer bytes (the cost model assumes the same).
  bool a_bytes_at_most_w(size_t place) {
    int64_t a = 0, w = 0;
    for (const Residency& load : member_residencies(place, kA))
      a += parts_[0].tile_size(load.key_a) * parts_[2].tile_size(load.key_b);
    for (const Residency& load : member_residencies(place, kW))
      w += parts_[2].tile_size(load.key_a) * parts_[1].tile_size(load.key_b);
    return a <= w;
  }

  const ops::Op& op_;
  uint64_t seed_;
  const GemmMapping& mapping_;
  const arch::ArchSpec& spec_;
  GemmProblem problem_;
  DimPartition parts_[3];
  BufferPlan plan_;
  bool multicast_[2] = {false, false};
  int tensor_[3] = {0, 1, 2};  // program tensor of A, W, O
  int64_t element_ = 0;
  int w_loads_per_tile_ = 1;
  bool w_whole_channels_ = true;
  DType accumulator_type_ = DType::fp32;
  arch::Program program_;
  std::vector<CorePlace> places_;
  std::vector<std::vector<Keyed>> keyed_;
  int order_ = 0;
  // Per operand, per core: iteration -> buffer it first uses there; iteration -> the free to signal after it.
  std::map<size_t, std::map<size_t, int>> first_use_[2];
  std::map<size_t, std::map<size_t, arch::SemaphoreRef>> last_use_[2];
  std::map<size_t, std::vector<Residency>> residency_cache_[2];
};

}  // namespace

arch::Program lower_gemm(const ops::Op& op, uint64_t seed, const GemmMapping& mapping,
                         const arch::ArchSpec& spec, const std::string& program_name) {
  return Lowering(op, seed, mapping, spec).run(program_name);
}

}  // namespace tessera::mapper
