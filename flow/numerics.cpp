#include "flow/numerics.hpp"

#include "ops/epilogue.hpp"

namespace tessera::flow {

traces::Numerics numerics_record(const ops::NumericsResult& numerics, DType operand) {
  const ops::Tolerance tolerance = ops::tolerance_for(operand);
  traces::Numerics check;
  check.reference = numerics.reference;
  check.max_abs_err = numerics.max_abs_err;
  check.rel_l2_err = numerics.rel_l2_err;
  check.tolerance_rel_l2 = tolerance.rel_l2;
  check.exact = tolerance.exact;
  check.pass = numerics.pass;
  return check;
}

traces::Numerics check_against_cpu(const ops::Op& op, const std::vector<double>& reference,
                                   const sim::RunResult& result, int output_tensor) {
  const ops::HostTensor& output = result.outputs.at(output_tensor);
  const DType checked = ops::numerics_dtype(op.dtype, output.dtype);
  return numerics_record(ops::compare_output(output, reference, checked, "cpu"), checked);
}

}  // namespace tessera::flow
