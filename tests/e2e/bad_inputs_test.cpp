// The bad-inputs corpus (tests/bad-inputs/, README there): every file is a broken machine, workload, --set or
// tile program with the exit code and message fragment it must give. One test runs the built tessera on each,
// as a user would (without SYSTEMC_DISABLE_COPYRIGHT_MESSAGE, so a SystemC banner would show), and checks the
// exit code, the fragment, that the message says where (file:line, the instruction or the --set) and gives a
// hint, that nothing crashed or leaked out of SystemC or a sanitizer, and that each case ends within its
// limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/cli_helpers.hpp"
#include "e2e/run_tessera.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// Far past what any case needs (the slowest takes well under a second): a case that reaches it hangs.
constexpr int kCaseLimitSeconds = 30;

struct BadInput {
  fs::path path;
  int exit_code = -1;
  std::string fragment;
  std::vector<std::string> arguments;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The header comments: `# expect: exit N: "fragment"` and, optionally, `# args: ...` (blank-separated;
// {file} is the case's file name, {configs} the shipped configs/). Without `args`, a machine or workload is
// validated and a program simulated.
BadInput read_case(const fs::path& path) {
  BadInput input;
  input.path = path;
  std::istringstream text(read_bytes(path));
  std::string arguments;
  for (std::string line; std::getline(text, line) && line.rfind('#', 0) == 0;) {
    if (line.rfind("# expect: exit ", 0) == 0) {
      input.exit_code = std::stoi(line.substr(15));
      const size_t open = line.find('"');
      const size_t close = line.rfind('"');
      if (open != std::string::npos && close > open) input.fragment = line.substr(open + 1, close - open - 1);
    } else if (line.rfind("# args: ", 0) == 0) {
      arguments = line.substr(8);
    }
  }
  const std::string folder = path.parent_path().filename().string();
  if (arguments.empty())
    arguments = folder == "programs" ? "sim --program {file}"
                : folder == "sweeps" ? "sweep --check {file}"
                                     : "validate {file}";
  std::istringstream words(arguments);
  for (std::string word; words >> word;) {
    for (const auto& [name, value] : {std::pair<std::string, std::string>{"{file}", path.filename().string()},
                                      {"{configs}", std::string(TESSERA_SOURCE_DIR) + "/configs"}})
      for (size_t at; (at = word.find(name)) != std::string::npos;) word.replace(at, name.size(), value);
    input.arguments.push_back(word);
  }
  return input;
}

std::string quoted(const std::string& argument) {
  std::string text = "'";
  for (char c : argument) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return text + "'";
}

std::vector<BadInput> corpus() {
  std::vector<BadInput> cases;
  for (const auto& entry :
       fs::recursive_directory_iterator(std::string(TESSERA_SOURCE_DIR) + "/tests/bad-inputs"))
    if (entry.is_regular_file() && entry.path().filename() != "README.md")
      cases.push_back(read_case(entry.path()));
  std::sort(cases.begin(), cases.end(), [](const BadInput& a, const BadInput& b) { return a.path < b.path; });
  return cases;
}

TEST(BadInputs, EveryCaseGivesItsLocatedMessageAndExitCodeAndNothingElse) {
  const std::vector<BadInput> cases = corpus();
  // The issue asks for at least 60; each kind of input is represented.
  ASSERT_GE(cases.size(), 60u);
  for (const char* folder : {"machines", "workloads", "set", "programs", "sweeps"})
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const BadInput& input) {
      return input.path.parent_path().filename() == folder;
    })) << folder;

  ScratchDir scratch;
  const std::regex file_line(R"([A-Za-z0-9_.-]+\.(yaml|tprog):[0-9]+(:[0-9]+)?: )");
  const std::regex instruction(R"(core [0-9]+,[0-9]+ [a-z0-9]+ #[0-9]+)");
  const std::regex option(R"(^error: [^\n]*--[a-z][a-z-]*: )");  // a command-line option's value
  for (const BadInput& input : cases) {
    SCOPED_TRACE(input.path.string());
    ASSERT_GE(input.exit_code, 0) << "no '# expect: exit N: \"fragment\"' line";
    ASSERT_FALSE(input.fragment.empty()) << "no fragment";
    std::string command = "(cd " + quoted(input.path.parent_path().string()) +
                          " && env -u SYSTEMC_DISABLE_COPYRIGHT_MESSAGE timeout -s KILL " +
                          std::to_string(kCaseLimitSeconds) + " " + TESSERA_BINARY;
    for (const std::string& argument : input.arguments) command += " " + quoted(argument);
    // In a subshell: run_command sends the whole command's stderr to its stdout.
    command += " >" + quoted(scratch.file("stdout")) + " 2>" + quoted(scratch.file("stderr")) + ")";
    const CommandResult result = run_command(command);
    const std::string error = read_text(scratch.file("stderr"));
    const std::string all = read_text(scratch.file("stdout")) + error;

    EXPECT_NE(result.exit_code, 137) << "ran past " << kCaseLimitSeconds << " s";
    EXPECT_EQ(result.exit_code, input.exit_code) << all;
    EXPECT_NE(error.find(input.fragment), std::string::npos)
        << "expected: " << input.fragment << "\ngot: " << error;
    // Or, for what is wrong with a file as a whole (a device, a FIFO, past its size cap), the file as the
    // command line named it.
    const bool names_an_argument_file =
        std::any_of(input.arguments.begin(), input.arguments.end(), [&](const std::string& argument) {
          return argument.find('/') != std::string::npos && error.rfind("error: " + argument + ": ", 0) == 0;
        });
    const bool located = std::regex_search(error, file_line) || std::regex_search(error, instruction) ||
                         error.find("error: --set ") != std::string::npos ||
                         std::regex_search(error, option) || names_an_argument_file;
    EXPECT_TRUE(located) << "no file:line, instruction, --set or option named: " << error;
    EXPECT_NE(error.find("\n  hint: "), std::string::npos) << "no hint: " << error;
    for (const char* forbidden : {"terminate called", "Error: (E", "SystemC 2.", "Copyright (c)", "Sanitizer",
                                  "runtime error:", "internal fault", "this is a bug in tessera"})
      EXPECT_EQ(all.find(forbidden), std::string::npos) << forbidden << " in:\n" << all;
  }
}

}  // namespace
}  // namespace tessera
