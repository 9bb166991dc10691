// The instruction table's out-of-line kinds (arch/isa/boxed.hpp): they behave as the values they hold, and
// keep every instruction as narrow as the common kinds.
#include <gtest/gtest.h>

#include <algorithm>

#include "arch/isa/program.hpp"

namespace tessera::arch {
namespace {

TEST(Boxed, CopiesAreDeepAndCompareByValue) {
  VecOp op;
  op.rows = 8;
  Operation operation = op;  // held out of line
  Operation copy = operation;
  operation_as<VecOp>(copy).rows = 16;
  EXPECT_EQ(operation_as<VecOp>(operation).rows, 8);
  EXPECT_FALSE(copy == operation);
  operation_as<VecOp>(copy).rows = 8;
  EXPECT_TRUE(copy == operation);
  EXPECT_EQ(operation_if<PeConv>(operation), nullptr);
  EXPECT_EQ(operation_if<DmaLoad>(operation), nullptr);
  EXPECT_NE(operation_if<VecOp>(operation), nullptr);
}

TEST(Boxed, AMovedFromValueCopiesAndComparesAsEmpty) {
  Boxed<PeConv> conv(PeConv{});
  Boxed<PeConv> taken = std::move(conv);
  const Boxed<PeConv> copy = conv;  // NOLINT: the moved-from value, on purpose
  EXPECT_TRUE(copy == conv);
  EXPECT_FALSE(copy == taken);
  conv = taken;  // assigned again, it holds a value
  EXPECT_TRUE(conv == taken);
}

TEST(Boxed, AnInstructionIsAsNarrowAsTheKindsHeldInIt) {
  // The widest kinds held in the instruction are loads and matmuls; a MoE program holds millions of them.
  EXPECT_LE(sizeof(Operation), std::max(sizeof(DmaLoad), sizeof(PeMatmul)) + 8);
  EXPECT_LE(sizeof(Instruction), 200u);
}

}  // namespace
}  // namespace tessera::arch
