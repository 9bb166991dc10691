#include "ops/reference.hpp"

namespace tessera::ops {

std::vector<HostTensor> generate_inputs(const Op& op, uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (const TensorDesc& desc : tensors_of(op))
    if (!desc.is_output)
      inputs.push_back(generate_input(desc.dtype, desc.rows, desc.cols, seed, desc.tensor_id, desc.rope_table,
                                      desc.index_range));
  return inputs;
}

std::vector<double> reference_output(const Op& op, const std::vector<HostTensor>& inputs, int threads) {
  return op.kind->reference(op, inputs, threads);
}

std::vector<double> reference_at(const Op& op, uint64_t seed, const std::vector<int64_t>& positions) {
  return op.kind->reference_at(op, seed, positions);
}

}  // namespace tessera::ops
