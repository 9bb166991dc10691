// What the vector op kinds (softmax, layernorm, rmsnorm, elementwise) share: a rows x cols tile of the op's
// storage type, computed in fp32 by the vector unit (DESIGN.md, "The vector unit"); float or half storage
// only.
#pragma once

#include <string>
#include <vector>

namespace tessera::ops {

// fp32, bf16, fp16: a vector op stores floats (an int8 softmax or norm has no meaning here).
const std::vector<std::string>& float_dtype_names();

}  // namespace tessera::ops
