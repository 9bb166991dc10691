#include "ops/tensor.hpp"

#include <cstring>

#include "common/error.hpp"
#include "common/large_memory.hpp"
#include "ops/encodings.hpp"
#include "ops/input_generator.hpp"

namespace tessera::ops {

HostTensor::HostTensor(DType type, int64_t row_count, int64_t col_count)
    : dtype(type),
      rows(row_count),
      cols(col_count),
      bytes(large_zeroed<uint8_t>(static_cast<size_t>(row_count * col_count * size_bytes(type)))) {}

double HostTensor::value(int64_t index) const {
  const uint8_t* at = bytes.data() + index * size_bytes(dtype);
  switch (dtype) {
    case DType::fp32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case DType::bf16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return bf16_to_float(v);
    }
    case DType::fp16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return fp16_to_float(v);
    }
    case DType::int8:
      return static_cast<int8_t>(*at);
    case DType::int32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
  }
  return 0;
}

HostTensor tensor_of_values(DType type, int64_t rows, int64_t cols, const std::vector<int64_t>& values) {
  HostTensor out(type, rows, cols);
  TESSERA_ASSERT(static_cast<int64_t>(values.size()) == out.elements(), "a listed value per element");
  TESSERA_ASSERT(type == DType::int32 || type == DType::int8, "listed values fill int8 and int32 tensors");
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::int32) {
      const auto value = static_cast<int32_t>(values[i]);
      TESSERA_ASSERT(value == values[i], "a listed value fits int32");
      std::memcpy(out.bytes.data() + i * 4, &value, 4);
    } else {
      const auto value = static_cast<int8_t>(values[i]);
      TESSERA_ASSERT(value == values[i], "a listed value fits int8");
      std::memcpy(out.bytes.data() + i, &value, 1);
    }
  }
  return out;
}

HostTensor generate_input(DType type, int64_t rows, int64_t cols, uint64_t seed, uint32_t tensor,
                          const std::optional<RopeTableFill>& table, int64_t index_range) {
  HostTensor out(type, rows, cols);
  const int64_t count = out.elements();
  if (table) {
    TESSERA_ASSERT(type == DType::fp32 && cols >= 2 && cols % 2 == 0,
                   "a rope table is fp32 with an even number of columns");
    auto* data = reinterpret_cast<float*>(out.bytes.data());
    for (int64_t i = 0; i < count; ++i)
      data[i] = rope_table_fp32(table->position, table->base, cols, static_cast<uint64_t>(i));
    return out;
  }
  switch (type) {
    case DType::fp32: {
      auto* data = reinterpret_cast<float*>(out.bytes.data());
      for (int64_t i = 0; i < count; ++i) data[i] = input_fp32(seed, tensor, i);
      break;
    }
    case DType::bf16: {
      auto* data = reinterpret_cast<uint16_t*>(out.bytes.data());
      for (int64_t i = 0; i < count; ++i) data[i] = input_bf16(seed, tensor, i);
      break;
    }
    case DType::fp16: {
      auto* data = reinterpret_cast<uint16_t*>(out.bytes.data());
      for (int64_t i = 0; i < count; ++i) data[i] = input_fp16(seed, tensor, i);
      break;
    }
    case DType::int8: {
      auto* data = reinterpret_cast<int8_t*>(out.bytes.data());
      for (int64_t i = 0; i < count; ++i) data[i] = input_int8(seed, tensor, i);
      break;
    }
    case DType::int32: {  // an index table: the first `count` of a permutation of 0 .. range - 1
      auto* data = reinterpret_cast<int32_t*>(out.bytes.data());
      const int64_t range = index_range > 0 ? index_range : count;
      TESSERA_ASSERT(count >= 1 && range >= count && range <= (int64_t{1} << 31),
                     "an index table holds 1 .. 2^31 indices into at most 2^31");
      for (int64_t i = 0; i < count; ++i)
        data[i] = static_cast<int32_t>(
            input_index(seed, tensor, static_cast<uint64_t>(i), static_cast<uint64_t>(range)));
      break;
    }
  }
  return out;
}

namespace {
// The functional GEMM widens every operand tile it reads, so this loop is hot. The source and destination
// never overlap (restrict), and the elements go 16 at a time: a loop of a fixed count is what -O2's
// vectoriser takes (bf16: a shift per element, 16 a vector), then the rest one by one.
template <class Convert>
void widen_each(const uint8_t* __restrict source, int64_t count, float* __restrict destination,
                Convert convert) {
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock)
    for (int64_t j = 0; j < kBlock; ++j) {
      uint16_t v;
      std::memcpy(&v, source + 2 * (i + j), 2);
      destination[i + j] = convert(v);
    }
  for (; i < count; ++i) {
    uint16_t v;
    std::memcpy(&v, source + 2 * i, 2);
    destination[i] = convert(v);
  }
}
}  // namespace

void widen_to_float(DType type, const uint8_t* source, int64_t count, float* destination) {
  switch (type) {
    case DType::fp32:
      std::memcpy(destination, source, static_cast<size_t>(count) * 4);
      return;
    case DType::bf16:
      widen_each(source, count, destination, [](uint16_t v) { return bf16_to_float(v); });
      return;
    case DType::fp16:
      widen_each(source, count, destination, [](uint16_t v) { return fp16_to_float(v); });
      return;
    case DType::int8:
      for (int64_t i = 0; i < count; ++i) destination[i] = static_cast<int8_t>(source[i]);
      return;
    case DType::int32:
      TESSERA_ASSERT(false, "int32 operands are not widened to float");
  }
}

}  // namespace tessera::ops
