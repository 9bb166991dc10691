// kind: rope on the GPU (issue "Attention"; ops/kinds/rope.hpp): X [batch*seq, heads*head_dim] of fp32, bf16
// or fp16 rotated by the cos/sin table T [seq, rotary_dim] fp32 — computed on the host by the generator's
// rope_table_fp32 (ops/input_generator.hpp) and copied up, so these are the simulator's and the CPU
// reference's bytes — in fp32 and stored in the op's type, as tessera's vector unit does
// (ops/vector_kernels.cpp, rope_rows, is the CPU side of the same arithmetic). A thread takes V elements of
// one head of one row: half pairs, V pairs (i, i + rotary_dim/2) loaded as two 16-byte vectors of X and V
// cos and V sin words of its token's table row; interleaved, one 16-byte vector of X holding V/2 pairs; past
// rotary_dim, V elements copied. X is read once, O written once, each table row read once per head (it stays
// in L1/L2). Heads whose sizes do not allow 16-byte vectors take the same kernel a pair (interleaved) or an
// element (half) at a time. PyTorch's eager rotate_half / interleaved formula and its torch.compile are timed
// next to it by scripts/gpu_torch_reference.py.
#include <cmath>
#include <memory>

#include "gpu/device.cuh"
#include "gpu/vectors.cuh"

namespace tessera::gpu {

namespace {

struct Rope {
  int64_t batch = 1, seq = 0, heads = 0, head_dim = 0, rotary = 0, position = 0;
  double base = 10000;
  bool interleaved = false;
  Dtype dtype = Dtype::bf16;
  uint64_t seed = 0;
  uint32_t x_id = 0;
  __host__ __device__ int64_t rows() const { return batch * seq; }
  __host__ __device__ int64_t cols() const { return heads * head_dim; }
  __host__ __device__ int64_t elements() const { return rows() * cols(); }
};

// N fp32 words from `data + index`: 16-byte loads when N fills them (the caller guarantees the alignment).
template <int N>
__device__ inline void load_floats(const float* data, int64_t index, float (&out)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 word = *reinterpret_cast<const float4*>(data + index + i);
      out[i] = word.x, out[i + 1] = word.y, out[i + 2] = word.z, out[i + 3] = word.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = data[index + i];
  }
}

// Units of V elements a head: the rotated ones (half: V pairs; interleaved: V elements), then the copied.
template <int V>
__host__ __device__ inline int64_t rotated_units(const Rope& r) {
  return r.interleaved ? r.rotary / V : r.rotary / 2 / V;
}
template <int V>
__host__ __device__ inline int64_t units_per_head(const Rope& r) {
  return rotated_units<V>(r) + (r.head_dim - r.rotary) / V;
}

template <Elem E, int V>
__global__ void __launch_bounds__(256) rope_kernel(Rope r, const void* x, const float* table, void* out) {
  const int64_t half = r.rotary / 2, rotated = rotated_units<V>(r), per_head = units_per_head<V>(r);
  const int64_t total = r.rows() * r.heads * per_head;
  for (int64_t item = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; item < total;
       item += int64_t{gridDim.x} * blockDim.x) {
    const int64_t unit = item % per_head, head_of_row = item / per_head;  // row * heads + head
    const int64_t at = head_of_row * r.head_dim;                          // the head's first element
    const float* cos_sin = table + (head_of_row / r.heads % r.seq) * r.rotary;
    if (unit >= rotated) {  // past rotary_dim: copied
      const int64_t col = r.rotary + (unit - rotated) * V;
      float v[V];
      load_vector<E, V>(x, at + col, v);
      store_vector<E, V>(out, at + col, v);
    } else if (!r.interleaved) {  // pairs (i, i + half): a vector of first halves, one of second halves
      const int64_t i = unit * V;
      float a[V], b[V], c[V], s[V];
      load_vector<E, V>(x, at + i, a);
      load_vector<E, V>(x, at + i + half, b);
      load_floats<V>(cos_sin, i, c);
      load_floats<V>(cos_sin, half + i, s);
      float first[V], second[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        first[j] = a[j] * c[j] - b[j] * s[j];
        second[j] = b[j] * c[j] + a[j] * s[j];
      }
      store_vector<E, V>(out, at + i, first);
      store_vector<E, V>(out, at + i + half, second);
    } else if constexpr (V >= 2) {  // pairs (2k, 2k+1): V/2 of them in one vector (never launched with V 1)
      const int64_t i = unit * V;
      float v[V], c[V / 2], s[V / 2];
      load_vector<E, V>(x, at + i, v);
      load_floats<V / 2>(cos_sin, i / 2, c);
      load_floats<V / 2>(cos_sin, half + i / 2, s);
      float o[V];
#pragma unroll
      for (int k = 0; k < V / 2; ++k) {
        o[2 * k] = v[2 * k] * c[k] - v[2 * k + 1] * s[k];
        o[2 * k + 1] = v[2 * k + 1] * c[k] + v[2 * k] * s[k];
      }
      store_vector<E, V>(out, at + i, o);
    }
  }
}

// The float64 reference at sampled positions, from the generator's X and cos/sin of the angles in float64
// (not the fp32 table: as ops/kinds/rope.cpp computes it).
__global__ void rope_reference_at(Rope r, const int64_t* positions, int count, double* out) {
  const int sample = blockIdx.x * blockDim.x + threadIdx.x;
  if (sample >= count) return;
  const int64_t index = positions[sample], row = index / r.cols(), col = index % r.head_dim;
  const int64_t head_start = index - col;
  auto x = [&](int64_t i) { return input_value(r.dtype, r.seed, r.x_id, static_cast<uint64_t>(i)); };
  if (col >= r.rotary) {
    out[sample] = x(index);
    return;
  }
  const int64_t half = r.rotary / 2;
  const int64_t pair = r.interleaved ? col / 2 : col % half;
  const int64_t first = r.interleaved ? 2 * pair : pair, second = r.interleaved ? 2 * pair + 1 : pair + half;
  const double angle = ops::rope_angle(r.base, r.rotary, pair, r.position + row % r.seq);
  const double c = cos(angle), s = sin(angle);
  const double a = x(head_start + first), b = x(head_start + second);
  out[sample] = col == first ? a * c - b * s : b * c + a * s;
}

// Copies of X spanning `rotate_bytes`, the table (read by every launch, as a model's cos_sin_cache is) and
// one output.
struct Operands {
  int copies = 1;
  std::vector<DeviceBuffer> x;
  DeviceBuffer table, out;
};

Operands make_operands(const Rope& r, size_t rotate_bytes) {
  const size_t bytes = static_cast<size_t>(r.elements()) * element_bytes(r.dtype);
  Operands operands;
  operands.copies = static_cast<int>(std::clamp<size_t>((rotate_bytes + 2 * bytes - 1) / (2 * bytes), 1, 64));
  for (int copy = 0; copy < operands.copies; ++copy) {
    operands.x.emplace_back(bytes);
    if (copy == 0) {
      fill_input<<<grid_for(r.elements()), 256>>>(r.dtype, r.seed, r.x_id, r.elements(), operands.x[0].get());
      check_launch("fill X");
    } else {
      TESSERA_CUDA(cudaMemcpy(operands.x[copy].get(), operands.x[0].get(), bytes, cudaMemcpyDeviceToDevice));
    }
  }
  operands.out = DeviceBuffer(bytes);
  std::vector<float> table(static_cast<size_t>(r.seq * r.rotary));
  for (size_t i = 0; i < table.size(); ++i) table[i] = ops::rope_table_fp32(r.position, r.base, r.rotary, i);
  operands.table = DeviceBuffer(table.size() * sizeof(float));
  TESSERA_CUDA(
      cudaMemcpy(operands.table.get(), table.data(), table.size() * sizeof(float), cudaMemcpyHostToDevice));
  return operands;
}

template <Elem E, int V>
void launch_rope(const Rope& r, const void* x, const float* table, void* out) {
  const int64_t items = r.rows() * r.heads * units_per_head<V>(r);
  rope_kernel<E, V><<<grid_for(items), 256, 0, work_stream()>>>(r, x, table, out);
}

// 16-byte vectors when a head's sizes allow them (every vector and table read aligned), else a pair or an
// element at a time.
template <Elem E>
void launch_for(const Rope& r, const void* x, const float* table, void* out) {
  constexpr int kWide = kWideOf<E>;
  if (r.head_dim % kWide == 0 && r.rotary % (2 * kWide) == 0) return launch_rope<E, kWide>(r, x, table, out);
  if (r.interleaved) return launch_rope<E, 2>(r, x, table, out);
  launch_rope<E, 1>(r, x, table, out);
}

Rope rope_of(const OpArgs& args) {
  Rope r;
  r.batch = args.integer("batch");
  r.seq = args.integer("seq");
  r.heads = args.integer("heads");
  r.head_dim = args.integer("head_dim");
  r.rotary = args.integer("rotary_dim");
  if (r.rotary == 0) r.rotary = r.head_dim;
  r.position = args.integer("position");
  r.base = args.real("base");
  const std::string style = args.get("style");
  if (style != "half" && style != "interleaved") fail(args.text + ": style is half or interleaved");
  r.interleaved = style == "interleaved";
  r.dtype = parse_dtype(args.get("dtype"));
  if (r.dtype == Dtype::int8) fail(args.text + ": a rope takes fp32, bf16 or fp16");
  r.seed = static_cast<uint64_t>(args.integer("seed"));
  r.x_id = ops::tensor_id(static_cast<uint32_t>(args.integer("index")), 0);
  // ops/kinds/rope.cpp's rules and limits.
  if (r.batch <= 0 || r.seq <= 0 || r.heads <= 0 || r.head_dim <= 0 || r.head_dim % 2 != 0 ||
      r.rotary % 2 != 0 || r.rotary <= 0 || r.rotary > r.head_dim || r.position < 0 || !(r.base > 1))
    fail(args.text +
         ": a rope needs positive sizes, an even head_dim, an even rotary_dim <= head_dim, "
         "position >= 0 and base > 1");
  if (static_cast<double>(r.rows()) * static_cast<double>(r.cols()) > 0x1p40)
    fail(args.text + ": X has more than 2^40 elements");
  return r;
}

OpMeasurement run_rope(const OpArgs& args, const RunContext& context) {
  const Rope r = rope_of(args);
  OpSpec spec;
  spec.kind = "rope";
  spec.name = args.get("name");
  spec.op.set("kind", spec.kind).set("name", spec.name).set("index", args.integer("index"));
  spec.op.set("batch", r.batch).set("seq", r.seq).set("heads", r.heads).set("head_dim", r.head_dim);
  // rotary_dim as given (0: head_dim), as the workload names the op
  spec.op.set("rotary_dim", args.integer("rotary_dim")).set("position", r.position).set("base", r.base);
  spec.op.set("style", r.interleaved ? "interleaved" : "half").set("dtype", args.get("dtype"));
  spec.op.set("seed", static_cast<int64_t>(r.seed));
  spec.seed = r.seed;
  spec.out_elements = r.elements();
  spec.work = static_cast<double>(r.elements());
  spec.work_note = "output elements, not floating-point operations";
  spec.rate_kind = rate_kind_of(r.dtype);
  // X read and O written once, the table once (its rows are shared by the batch).
  spec.bytes = 2.0 * static_cast<double>(r.elements()) * static_cast<double>(element_bytes(r.dtype)) +
               static_cast<double>(r.seq * r.rotary) * 4;
  spec.reference = [r](const int64_t* positions, int count, double* out) {
    rope_reference_at<<<(count + 255) / 256, 256>>>(r, positions, count, out);
  };
  PathSpec path;
  path.name = std::string("cuda-") + args.get("dtype");
  path.numerics = true;
  path.output = r.dtype == Dtype::bf16   ? OutputType::bf16
                : r.dtype == Dtype::fp16 ? OutputType::fp16
                                         : OutputType::fp32;
  path.tolerance = tolerance_for(path.output, r.dtype != Dtype::fp32, false);
  path.bytes = spec.bytes;
  path.build = [r](const RunContext& run, std::string*) -> std::optional<LivePath> {
    LivePath live = live_on(make_operands(r, run.rotate_bytes));
    Operands* data = static_cast<Operands*>(live.state.get());
    live.launch = [r, data](int i) {
      const void* x = data->x[i % data->copies].get();
      const auto* table = static_cast<const float*>(data->table.get());
      switch (r.dtype) {
        case Dtype::fp32:
          return launch_for<Elem::fp32>(r, x, table, data->out.get());
        case Dtype::bf16:
          return launch_for<Elem::bf16>(r, x, table, data->out.get());
        default:
          return launch_for<Elem::fp16>(r, x, table, data->out.get());
      }
    };
    live.chosen = r.head_dim % 8 == 0 && r.rotary % 16 == 0 ? "16-byte vectors" : "narrow vectors";
    return live;
  };
  spec.paths.push_back(path);
  return measure_op(spec, context);
}

}  // namespace

void register_rope() {
  op_registry()["rope"] = run_rope;
}

}  // namespace tessera::gpu
