#include "flow/layer_cache.hpp"

namespace tessera::flow {

std::string layer_key(const ops::Op& op) {
  std::string key;
  for (const auto& field : ops::to_yaml(op))
    if (field.first.Scalar() != "name") key += field.first.Scalar() + "=" + field.second.Scalar() + " ";
  return key;
}

}  // namespace tessera::flow
