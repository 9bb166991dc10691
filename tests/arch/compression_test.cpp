// Run-length coding of sparse activations (dram.rlc, arch/timing/compression.hpp): the closed form the
// simulator and the cost model use against a real encoder of Eyeriss's format run over random data.
#include "arch/timing/compression.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace tessera::arch {
namespace {

// Codes `count` values, each non-zero with probability `density`, as pairs of a run of at most 2^run_bits - 1
// zeros and the value after it (a run at its limit spends a pair on a zero value), pairs_per_word pairs a
// word; returns the coded bytes.
int64_t encode(const RlcSpec& rlc, int64_t count, double density, uint32_t seed) {
  std::mt19937 generator(seed);
  std::bernoulli_distribution non_zero(density);
  const int64_t longest = (int64_t{1} << rlc.run_bits) - 1;
  int64_t pairs = 0, run = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (non_zero(generator) || run == longest) {
      ++pairs;  // the run so far, then this value (a zero one when the run is at its limit)
      run = 0;
    } else {
      ++run;
    }
  }
  if (run > 0) ++pairs;  // the trailing zeros
  const int64_t words = (pairs + rlc.pairs_per_word - 1) / rlc.pairs_per_word;
  return words * rlc.word_bytes;
}

TEST(Compression, TheClosedFormIsWhatAnEncoderOfTheFormatWritesForRandomZeros) {
  const RlcSpec eyeriss{5, 3, 8};
  const int64_t count = 1 << 20;
  for (double density : {0.05, 0.1, 0.3, 0.5, 0.7}) {
    const double coded = static_cast<double>(encode(eyeriss, count, density, 7)) / (2.0 * count);
    EXPECT_NEAR(coded_fraction(eyeriss, density, DType::bf16), coded, 0.005 * coded) << density;
  }
  // Half the values zero: a pair a non-zero value, 8/3 bytes, against two bytes raw.
  EXPECT_NEAR(coded_fraction(eyeriss, 0.5, DType::fp16), 2.0 / 3.0, 1e-9);
  // A 2-bit run field: runs of up to 3 zeros; a pair in every fourth value when all are zero.
  const RlcSpec short_runs{2, 3, 8};
  EXPECT_NEAR(coded_fraction(short_runs, 0.05, DType::bf16),
              static_cast<double>(encode(short_runs, count, 0.05, 3)) / (2.0 * count), 0.005);
}

TEST(Compression, DenseDataWiderValuesOrNoCoderMoveRaw) {
  const RlcSpec eyeriss{5, 3, 8};
  EXPECT_EQ(coded_fraction(std::nullopt, 0.3, DType::bf16), 1.0);
  EXPECT_EQ(coded_fraction(eyeriss, 1.0, DType::bf16), 1.0);
  // At 90% non-zero the code (4/3 x 0.9 = 1.2 of the raw bytes) is larger: moved raw.
  EXPECT_EQ(coded_fraction(eyeriss, 0.9, DType::bf16), 1.0);
  // Three pairs of a 5-bit run and a 32-bit value do not fit 64 bits.
  EXPECT_EQ(coded_fraction(eyeriss, 0.3, DType::fp32), 1.0);
  // int8 values fit: a pair of 13 bits, 8/3 bytes a pair against one byte raw: coded only below 37.5%.
  EXPECT_NEAR(coded_fraction(eyeriss, 0.3, DType::int8), 0.3 * 8.0 / 3.0, 1e-4);
  EXPECT_EQ(coded_bytes(1000, 1.0), 1000);
  EXPECT_EQ(coded_bytes(1000, 2.0 / 3.0), 667);
  EXPECT_EQ(coded_bytes(300, 0.5), 150);
}

}  // namespace
}  // namespace tessera::arch
