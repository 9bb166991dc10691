// Tile kernels (ops/tile_kernels.hpp): the arithmetic of the simulator's PE array and reduction units, on raw
// bytes at SRAM-like pitches.
#include "ops/tile_kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "ops/input_generator.hpp"
#include "ops/tensor.hpp"

namespace tessera::ops {
namespace {

constexpr uint8_t kPadding = 0xff;  // NaN in every float format, -1 in int8: reading it would show
constexpr uint8_t kOutputPadding = 0x5a;

// A rows x cols tile of `type` in a buffer whose rows are `pitch` bytes apart; the gaps hold `padding`.
struct PitchedTile {
  DType type;
  int64_t rows, cols, pitch;
  std::vector<uint8_t> bytes;

  PitchedTile(DType element_type, int64_t row_count, int64_t col_count, int64_t extra_bytes, uint8_t padding)
      : type(element_type),
        rows(row_count),
        cols(col_count),
        pitch(col_count * size_bytes(element_type) + extra_bytes),
        bytes(static_cast<size_t>(row_count * pitch), padding) {}

  int64_t row_bytes() const { return cols * size_bytes(type); }
  uint8_t* row(int64_t r) { return bytes.data() + r * pitch; }

  static PitchedTile from(const HostTensor& tensor, int64_t extra_bytes) {
    PitchedTile tile(tensor.dtype, tensor.rows, tensor.cols, extra_bytes, kPadding);
    for (int64_t r = 0; r < tile.rows; ++r)
      std::memcpy(tile.row(r), tensor.bytes.data() + r * tile.row_bytes(),
                  static_cast<size_t>(tile.row_bytes()));
    return tile;
  }

  template <class Scalar>
  Scalar at(int64_t r, int64_t c) const {
    Scalar value;
    std::memcpy(&value, bytes.data() + r * pitch + c * sizeof(Scalar), sizeof value);
    return value;
  }

  template <class Scalar>
  void set(int64_t r, int64_t c, Scalar value) {
    std::memcpy(bytes.data() + r * pitch + c * sizeof(Scalar), &value, sizeof value);
  }

  // Every byte between the end of a row and the next row's start still holds `padding`.
  bool gaps_hold(uint8_t padding) const {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = row_bytes(); b < pitch; ++b)
        if (bytes[static_cast<size_t>(r * pitch + b)] != padding) return false;
    return true;
  }
};

struct Product {
  PitchedTile out;
  std::vector<double> exact;      // sum of a*w in float64, row-major
  std::vector<double> magnitude;  // sum of |a*w|, for the rounding bound
};

// Generated m x k and k x n operands at padded pitches, multiplied by gemm_tile into a padded output.
Product multiply(DType operand, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  const HostTensor a = generate_input(operand, m, k, seed, 0);
  const HostTensor w = generate_input(operand, k, n, seed, 1);
  PitchedTile a_tile = PitchedTile::from(a, 12);
  PitchedTile w_tile = PitchedTile::from(w, 20);
  PitchedTile o_tile(accumulator_of(operand), m, n, 12, kOutputPadding);
  std::fill(o_tile.bytes.begin(), o_tile.bytes.end(), kPadding);  // stale data in the rows too
  for (int64_t r = 0; r < m; ++r) std::memset(o_tile.row(r) + o_tile.row_bytes(), kOutputPadding, 12);
  gemm_tile(operand, a_tile.bytes.data(), a_tile.pitch, w_tile.bytes.data(), w_tile.pitch,
            o_tile.bytes.data(), o_tile.pitch, m, n, k, /*accumulate=*/false);
  Product product{o_tile, std::vector<double>(m * n, 0.0), std::vector<double>(m * n, 0.0)};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const double term = a.value(i * k + p) * w.value(p * n + j);
        product.exact[i * n + j] += term;
        product.magnitude[i * n + j] += std::abs(term);
      }
  return product;
}

struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{1, 1, 1}, {1, 16, 3}, {17, 1, 33}, {5, 7, 9}, {33, 31, 64}, {8, 130, 5}};

TEST(GemmTile, Int8AccumulatesExactlyInInt32AtPaddedPitches) {
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(::testing::Message() << "m=" << shape.m << " n=" << shape.n << " k=" << shape.k);
    const Product product = multiply(DType::int8, shape.m, shape.n, shape.k, 3);
    for (int64_t i = 0; i < shape.m; ++i)
      for (int64_t j = 0; j < shape.n; ++j)
        ASSERT_EQ(product.out.at<int32_t>(i, j), product.exact[i * shape.n + j]) << i << "," << j;
    EXPECT_TRUE(product.out.gaps_hold(kOutputPadding)) << "wrote outside the output rows";
  }
}

TEST(GemmTile, Int8ExtremesDoNotOverflow) {
  // -128 * -128 over k = 1024 is 2^24; int8 products widened before multiplying.
  PitchedTile a(DType::int8, 2, 1024, 3, 0x80);
  PitchedTile w(DType::int8, 1024, 3, 1, 0x80);
  PitchedTile o(DType::int32, 2, 3, 4, kOutputPadding);
  gemm_tile(DType::int8, a.bytes.data(), a.pitch, w.bytes.data(), w.pitch, o.bytes.data(), o.pitch, 2, 3,
            1024, false);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(o.at<int32_t>(i, j), 16777216);
}

TEST(GemmTile, FloatOperandsStayWithinFp32AccumulationError) {
  // Products of bf16 or fp16 values are exact in fp32 (8- or 11-bit significands); only the k-term sum
  // rounds, by at most k * 2^-24 * sum|a*w| (Higham, "Accuracy and Stability of Numerical Algorithms",
  // Sec. 3.1). fp32 products round too: one more unit.
  for (DType operand : {DType::bf16, DType::fp16, DType::fp32}) {
    for (const Shape& shape : {Shape{9, 11, 1000}, Shape{5, 7, 9}, Shape{1, 1, 1}}) {
      SCOPED_TRACE(::testing::Message()
                   << name_of(operand) << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k);
      const Product product = multiply(operand, shape.m, shape.n, shape.k, 8);
      const double units = static_cast<double>(shape.k) + (operand == DType::fp32 ? 1 : 0);
      for (int64_t i = 0; i < shape.m; ++i)
        for (int64_t j = 0; j < shape.n; ++j) {
          const double bound = units * std::ldexp(1.0, -24) * product.magnitude[i * shape.n + j];
          ASSERT_LE(std::abs(product.out.at<float>(i, j) - product.exact[i * shape.n + j]), bound)
              << i << "," << j;
        }
      EXPECT_TRUE(product.out.gaps_hold(kOutputPadding));
    }
  }
}

TEST(GemmTile, KOfOneIsTheExactProduct) {
  const Product product = multiply(DType::bf16, 4, 6, 1, 2);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(product.out.at<float>(i, j), product.exact[i * 6 + j]);
}

TEST(GemmTile, AccumulateAddsToTheOutputAndOverwriteIgnoresIt) {
  for (DType operand : {DType::fp32, DType::bf16, DType::int8}) {
    SCOPED_TRACE(name_of(operand));
    const int64_t m = 6, n = 5, k = 7;
    const HostTensor a = generate_input(operand, m, k, 4, 0);
    const HostTensor w = generate_input(operand, k, n, 4, 1);
    PitchedTile a_tile = PitchedTile::from(a, 8);
    PitchedTile w_tile = PitchedTile::from(w, 8);
    auto run = [&](PitchedTile& o, bool accumulate) {
      gemm_tile(operand, a_tile.bytes.data(), a_tile.pitch, w_tile.bytes.data(), w_tile.pitch, o.bytes.data(),
                o.pitch, m, n, k, accumulate);
    };
    const DType accumulator = accumulator_of(operand);
    PitchedTile fresh(accumulator, m, n, 8, kOutputPadding);
    for (int64_t r = 0; r < m; ++r)
      std::memset(fresh.row(r), kPadding, static_cast<size_t>(fresh.row_bytes()));
    run(fresh, false);  // the old contents (NaN / -1) are overwritten
    PitchedTile partial(accumulator, m, n, 8, kOutputPadding);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (accumulator == DType::int32)
          partial.set<int32_t>(i, j, static_cast<int32_t>(1000 * i - 7 * j));
        else
          partial.set<float>(i, j, 0.25f * static_cast<float>(i) - 0.125f * static_cast<float>(j));
      }
    PitchedTile accumulated = partial;
    run(accumulated, true);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (accumulator == DType::int32) {
          ASSERT_EQ(accumulated.at<int32_t>(i, j), partial.at<int32_t>(i, j) + fresh.at<int32_t>(i, j));
        } else {
          ASSERT_FALSE(std::isnan(fresh.at<float>(i, j)));
          ASSERT_EQ(accumulated.at<float>(i, j), partial.at<float>(i, j) + fresh.at<float>(i, j));
        }
      }
    EXPECT_TRUE(fresh.gaps_hold(kOutputPadding));
    EXPECT_TRUE(accumulated.gaps_hold(kOutputPadding));
  }
}

TEST(GemmTile, ResultDoesNotDependOnEarlierCallsOfOtherShapes) {
  // The kernel keeps scratch matrices between calls; a small tile after a large one must not see stale data.
  const Product before = multiply(DType::bf16, 3, 4, 5, 6);
  multiply(DType::bf16, 64, 64, 128, 7);
  multiply(DType::fp32, 2, 70, 3, 7);
  const Product after = multiply(DType::bf16, 3, 4, 5, 6);
  EXPECT_EQ(before.out.bytes, after.out.bytes);
  const Product int8_before = multiply(DType::int8, 3, 4, 5, 6);
  multiply(DType::int8, 40, 50, 60, 7);
  EXPECT_EQ(multiply(DType::int8, 3, 4, 5, 6).out.bytes, int8_before.out.bytes);
}

TEST(GemmTile, Int32IsNeverAnOperand) {
  std::vector<uint8_t> buffer(64);
  EXPECT_THROW(gemm_tile(DType::int32, buffer.data(), 4, buffer.data(), 4, buffer.data(), 4, 1, 1, 1, false),
               InternalError);
}

TEST(AddTile, AddsFp32PartialSumsWithinPitchedRows) {
  const int64_t rows = 5, cols = 7;
  PitchedTile destination(DType::fp32, rows, cols, 12, kOutputPadding);
  PitchedTile source(DType::fp32, rows, cols, 4, kPadding);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      destination.set<float>(r, c, input_fp32(1, 0, r * cols + c));
      source.set<float>(r, c, 1000.0f * input_fp32(1, 1, r * cols + c));
    }
  const PitchedTile before = destination;
  add_tile(DType::fp32, destination.bytes.data(), destination.pitch, source.bytes.data(), source.pitch, rows,
           cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_EQ(destination.at<float>(r, c),
                before.at<float>(r, c) + source.at<float>(r, c));  // one fp32 add
  EXPECT_TRUE(destination.gaps_hold(kOutputPadding));
}

TEST(AddTile, AddsInt32PartialSumsExactly) {
  const int64_t rows = 3, cols = 9;
  PitchedTile destination(DType::int32, rows, cols, 8, kOutputPadding);
  PitchedTile source(DType::int32, rows, cols, 16, kPadding);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      destination.set<int32_t>(r, c, static_cast<int32_t>(100000 * r - 3 * c));
      source.set<int32_t>(r, c, static_cast<int32_t>(-16777216 + 11 * c + r));
    }
  add_tile(DType::int32, destination.bytes.data(), destination.pitch, source.bytes.data(), source.pitch, rows,
           cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_EQ(destination.at<int32_t>(r, c), 100000 * r - 3 * c - 16777216 + 11 * c + r);
  EXPECT_TRUE(destination.gaps_hold(kOutputPadding));
}

TEST(AddTile, OnlyPartialSumTypesAreAdded) {
  std::vector<uint8_t> buffer(16);
  EXPECT_THROW(add_tile(DType::int8, buffer.data(), 4, buffer.data(), 4, 1, 1), InternalError);
}

// 16-bit partial sums (psum: fp16 or bf16) are added in fp32 and rounded to nearest even: 2048 + 1 in fp16
// (11 significant bits) is a tie that rounds to the even 2048, 2048 + 3 rounds up to 2052; bf16 keeps 8 bits.
TEST(AddTile, AddsSixteenBitPartialSumsInFp32RoundedToNearestEven) {
  for (DType type : {DType::fp16, DType::bf16}) {
    const auto encode = [type](float x) { return type == DType::fp16 ? float_to_fp16(x) : float_to_bf16(x); };
    const auto decode = [type](uint16_t h) {
      return type == DType::fp16 ? fp16_to_float(h) : bf16_to_float(h);
    };
    const float big = type == DType::fp16 ? 2048.0F : 256.0F;  // one unit in the last place is 2
    std::vector<uint16_t> destination = {encode(big), encode(big), encode(-1.5F), encode(0.25F)};
    const std::vector<uint16_t> source = {encode(1.0F), encode(3.0F), encode(1.5F), encode(0.5F)};
    add_tile(type, reinterpret_cast<uint8_t*>(destination.data()), 4,
             reinterpret_cast<const uint8_t*>(source.data()), 4, 2, 2);
    EXPECT_EQ(decode(destination[0]), big);         // a tie: to the even neighbour
    EXPECT_EQ(decode(destination[1]), big + 4.0F);  // past the tie: up
    EXPECT_EQ(decode(destination[2]), 0.0F);
    EXPECT_EQ(decode(destination[3]), 0.75F);
  }
}

// A PE instruction's fp32 product written into fp16 partial sums: the first pass rounds the product, a later
// one rounds the sum of what is there and its product, each pass once.
TEST(WritePartialSums, EachPassIsSummedInFp32AndRoundedOnceToThePartialSumType) {
  const std::vector<float> first = {2048.0F, 1.0F / 3.0F, -7.25F};
  const std::vector<float> second = {1.0F, 1.0F / 3.0F, 0.125F};
  std::vector<uint16_t> psums(3, 0xffff);
  write_partial_sums(DType::bf16, DType::fp16, reinterpret_cast<uint8_t*>(psums.data()), 6,
                     reinterpret_cast<const uint8_t*>(first.data()), 12, 1, 3, /*accumulate=*/false);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(psums[i], float_to_fp16(first[i])) << i;
  write_partial_sums(DType::bf16, DType::fp16, reinterpret_cast<uint8_t*>(psums.data()), 6,
                     reinterpret_cast<const uint8_t*>(second.data()), 12, 1, 3, /*accumulate=*/true);
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(psums[i], float_to_fp16(fp16_to_float(float_to_fp16(first[i])) + second[i])) << i;
  EXPECT_EQ(fp16_to_float(psums[0]), 2048.0F);  // 2049 is a tie between 2048 and 2050
  // fp32 partial sums are the accumulator's: copied, then added exactly as add_tile adds them.
  std::vector<float> wide(3, -1.0F);
  write_partial_sums(DType::fp16, DType::fp32, reinterpret_cast<uint8_t*>(wide.data()), 12,
                     reinterpret_cast<const uint8_t*>(first.data()), 12, 1, 3, false);
  write_partial_sums(DType::fp16, DType::fp32, reinterpret_cast<uint8_t*>(wide.data()), 12,
                     reinterpret_cast<const uint8_t*>(second.data()), 12, 1, 3, true);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(wide[i], first[i] + second[i]) << i;
}

}  // namespace

// W stored transposed (n rows of k, a padded pitch): the same product as W stored as it is.
TEST(GemmTile, ATransposedWGivesTheSameProduct) {
  for (DType operand : {DType::fp32, DType::bf16, DType::int8}) {
    const int64_t m = 5, n = 7, k = 9;
    const HostTensor a = generate_input(operand, m, k, 4, 0);
    const HostTensor w = generate_input(operand, k, n, 4, 1);
    const int64_t element = size_bytes(operand), out = size_bytes(accumulator_of(operand));
    std::vector<uint8_t> wt(static_cast<size_t>(n * (k * element + 8)));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        std::memcpy(&wt[static_cast<size_t>(j * (k * element + 8) + p * element)],
                    &w.bytes[static_cast<size_t>((p * n + j) * element)], static_cast<size_t>(element));
    std::vector<uint8_t> plain(static_cast<size_t>(m * n * out)), transposed(plain.size());
    gemm_tile(operand, a.bytes.data(), k * element, w.bytes.data(), n * element, plain.data(), n * out, m, n,
              k, false);
    gemm_tile(operand, a.bytes.data(), k * element, wt.data(), k * element + 8, transposed.data(), n * out, m,
              n, k, false, /*w_transposed=*/true);
    EXPECT_EQ(plain, transposed) << name_of(operand);
  }
}

}  // namespace tessera::ops
