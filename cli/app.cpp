#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "arch/spec.hpp"
#include "common/config.hpp"

namespace tessera::cli {

int main(int argc, char** argv) {
  CLI::App app{"tessera: a cycle-approximate simulator of AI accelerators with an operator mapper"};
  std::string path;
  auto* validate = app.add_subcommand("validate", "check a config and print its resolved form");
  validate->add_option("config", path, "machine YAML")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto document = config::load_file(path);
    const auto spec = arch::arch_from_yaml(document);
    std::fputs(config::to_yaml_text(arch::to_yaml(spec)).c_str(), stdout);
  } catch (const InputError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
  return 0;
}

}  // namespace tessera::cli
