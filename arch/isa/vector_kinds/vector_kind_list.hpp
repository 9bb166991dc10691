// The one table of the vector unit's instruction kinds: one line per kind, in the order of arch::VectorKind,
// which this list produces (arch/timing/vector_timing.hpp). A kind's descriptor, `<kind>_kind_info()`, is
// arch/isa/vector_kinds/<kind>.cpp; the simulator's arithmetic for it is a line of
// sim/vector_kind_kernels.cpp (docs/extending.md, "A vector op kind"). The binary program stores a kind by
// its position here: add a kind at the end.
//
// online_softmax and scale_rows are attention's (flash-style): one K/V tile's step of a running softmax, and
// the rescale of the output accumulator's rows by the step's correction or by the final 1/sum; merge_partials
// is split-KV decode's: the merge of several cores' partial accumulators of the same rows by their
// statistics. rope rotates pairs of each head's first columns by a per-row table of cos and sin (rotary
// position embedding). weighted_sum is a mixture-of-experts combine: each row the sum of its parts' rows
// weighted by per-row gate weights; route computes a mixture-of-experts router's scores and selection and the
// gate weights of a row's chosen experts. rope is an arch::VecRope and route an arch::VecRoute; every other
// kind is an arch::VecOp.
#pragma once

#define TESSERA_VECTOR_KINDS(KIND) \
  KIND(map)                        \
  KIND(reduce_sum)                 \
  KIND(reduce_max)                 \
  KIND(softmax)                    \
  KIND(layernorm)                  \
  KIND(rmsnorm)                    \
  KIND(pool)                       \
  KIND(online_softmax)             \
  KIND(scale_rows)                 \
  KIND(merge_partials)             \
  KIND(weighted_sum)               \
  KIND(rope)                       \
  KIND(route)
