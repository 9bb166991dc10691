// The strict config reader (STYLE.md, "Configuration"; DESIGN.md, "Outputs and conventions"): what a user
// sees when a config is wrong is part of the interface, so these tests pin the full message text.
#include "common/config.hpp"
#include "support/input_errors.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace tessera::config {
namespace {

using testing_support::input_error_of;

// A file under the test's temporary directory, removed when the test ends.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) : path_(testing::TempDir() + name) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A small document with nested mappings, a list of names and a list of named mappings (line numbers right).
constexpr const char* kCore =
    "name: x\n"                   // 1
    "core:\n"                     // 2
    "  sram:\n"                   // 3
    "    kib: 64\n"               // 4
    "    banks: 16\n"             // 5
    "  dataflows: [ws, os]\n"     // 6
    "ops:\n"                      // 7
    "  - {name: ffn1, m: 8}\n"    // 8
    "  - {name: ffn2, m: 16}\n";  // 9

// ---------------------------------------------------------------------------------------------------------
// Required and unknown fields

TEST(MapReader, MergeKeysAndNulBytesAreRefusedNotDropped) {
  // Before: yaml-cpp read "<<" as a plain key, so the merged fields were silently missing, and a NUL byte in
  // a quoted name was taken (and cut every message and path short).
  Document merged = load_text("base: &b {rows: 4}\nmesh: {<<: *b, cols: 4}\n", "m.yaml");
  MapReader top(merged.root, merged, "");
  const InputError merge = input_error_of([&] { top.map("mesh"); });
  EXPECT_EQ(std::string(merge.what()),
            "m.yaml:2:8: mesh.<<: YAML merge keys (<<) are not supported\n"
            "  hint: write the merged fields out in this mapping");
  Document nul = load_text("name: \"a\\0b\"\n", "m.yaml");
  MapReader named(nul.root, nul, "");
  EXPECT_EQ(std::string(input_error_of([&] { named.string("name"); }).what()),
            "m.yaml:1:7: name: the text holds a NUL byte\n  hint: names and paths are printable text");
}

TEST(MapReader, MissingRequiredFieldNamesTheEnclosingMapAndHintsTheKey) {
  Document document = load_text(kCore, "arch.yaml");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("core").map("sram");
  const InputError error = input_error_of([&] { sram.integer("bank_width_bytes"); });
  EXPECT_EQ(error.where().line, 4);  // the sram mapping starts at its first key
  EXPECT_EQ(error.where().column, 5);
  EXPECT_EQ(error.field(), "core.sram.bank_width_bytes");
  EXPECT_EQ(error.message(), "required field is missing");
  EXPECT_EQ(error.hint(), "add 'bank_width_bytes:' to 'core.sram'");
  EXPECT_EQ(std::string(error.what()),
            "arch.yaml:4:5: core.sram.bank_width_bytes: required field is missing\n"
            "  hint: add 'bank_width_bytes:' to 'core.sram'");
}

TEST(MapReader, MissingTopLevelFieldHintsTheTopLevel) {
  Document document = load_text("name: x\n", "w.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] { top.integer("seed"); }).what()),
            "w.yaml:1:1: seed: required field is missing\n  hint: add 'seed:' to the top level");
}

TEST(MapReader, KeyWithoutValueCountsAsMissingButTakesTheDefault) {
  Document document = load_text("seed:\nchannels:\n", "w.yaml");
  MapReader top(document.root, document, "");
  EXPECT_FALSE(top.has("seed"));
  EXPECT_EQ(input_error_of([&] { top.integer("seed"); }).message(), "required field is missing");
  EXPECT_EQ(top.integer("channels", 4), 4);
  top.finish();  // both keys were read
}

TEST(MapReader, UnknownKeyPointsAtTheKeyItselfAndSuggestsTheClosestKnownKey) {
  Document document = load_text(
      "sram:\n"
      "  kib: 64\n"
      "  bnaks: 16\n",
      "arch.yaml");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("sram");
  sram.integer("kib");
  sram.integer("banks", 1);
  const InputError error = input_error_of([&] { sram.finish(); });
  EXPECT_EQ(std::string(error.what()),
            "arch.yaml:3:3: sram.bnaks: unknown key; did you mean 'banks'?\n"
            "  hint: the README lists every field of this file");
}

TEST(MapReader, UnknownKeyFarFromEveryKnownKeyGetsNoSuggestion) {
  Document document = load_text("kib: 64\nzzzzzz: 1\n", "a.yaml");
  MapReader top(document.root, document, "");
  top.integer("kib");
  EXPECT_EQ(input_error_of([&] { top.finish(); }).message(), "unknown key");
}

TEST(MapReader, ReportsTheFirstUnknownKeyInFileOrder) {
  // Not the first in alphabetical order: the user fixes errors from the top of the file down.
  Document document = load_text("kib: 64\nzeta: 1\nalpha: 2\n", "a.yaml");
  MapReader top(document.root, document, "");
  top.integer("kib");
  const InputError error = input_error_of([&] { top.finish(); });
  EXPECT_EQ(error.field(), "zeta");
  EXPECT_EQ(error.where().line, 2);
}

TEST(MapReader, FinishAcceptsAMapWhoseEveryKeyWasRead) {
  Document document = load_text("kib: 64\nbanks: 4\n", "a.yaml");
  MapReader top(document.root, document, "");
  top.integer("kib");
  top.integer("banks");
  EXPECT_NO_THROW(top.finish());
}

TEST(MapReader, DuplicateKeyIsAnErrorAtTheSecondOccurrence) {
  Document document = load_text("a: 1\nb: 2\na: 3\n", "d.yaml");
  EXPECT_EQ(std::string(input_error_of([&] { MapReader(document.root, document, ""); }).what()),
            "d.yaml:3:1: a: duplicate key\n  hint: each key may appear once in a mapping");
}

TEST(MapReader, KeyMustBeAName) {
  // yaml-cpp allows a list as a key; it must be a user error, not an exception from inside yaml-cpp.
  Document document = load_text("sram:\n  ? [kib, banks]\n  : 64\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] { top.map("sram"); }).what()),
            "a.yaml:2:5: sram: expected a key name, got a list"
            "\n  hint: keys are field names: letters, digits and '_'");
}

TEST(MapReader, ScalarWhereAMappingIsExpectedIsAnError) {
  Document document = load_text("name: x\ncore: 3\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] { top.map("core"); }).what()),
            "a.yaml:2:7: core: expected a mapping of keys to values, got a scalar"
            "\n  hint: write 'key: value' lines indented under it, or {key: value, ...}");
}

TEST(MapReader, TopLevelListIsNotAConfig) {
  Document document = load_text("- a\n- b\n", "a.yaml");
  EXPECT_EQ(std::string(input_error_of([&] { MapReader(document.root, document, ""); }).what()),
            "a.yaml:1:1: (top level): expected a mapping of keys to values, got a list"
            "\n  hint: write 'key: value' lines indented under it, or {key: value, ...}");
}

TEST(MapReader, EmptyDocumentReadsAsAnEmptyMapping) {
  Document document = load_text("", "empty.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.integer("rows", 7), 7);
  EXPECT_NO_THROW(top.finish());
}

TEST(MapReader, AbsentOptionalMapReadsAsEmpty) {
  Document document = load_text("name: x\n", "a.yaml");
  MapReader top(document.root, document, "");
  MapReader energy = top.map_or_empty("energy_pj");
  EXPECT_EQ(energy.number("mac", 0.5), 0.5);
  energy.finish();
  top.string("name");
  EXPECT_NO_THROW(top.finish());
}

// ---------------------------------------------------------------------------------------------------------
// Types

TEST(MapReader, IntegerRejectsTextAndQuotesIt) {
  Document document = load_text("rows: abc\n", "a.yaml");
  MapReader top(document.root, document, "");
  const InputError error = input_error_of([&] { top.integer("rows"); });
  EXPECT_EQ(std::string(error.what()),
            "a.yaml:1:7: rows: expected an integer, got 'abc'"
            "\n  hint: write a whole number: decimal (64) or hexadecimal (0x40), within 64 bits");
  EXPECT_EQ(error.where().line, 1);
  EXPECT_EQ(error.where().column, 7);  // the value, not the key
}

TEST(MapReader, IntegerRejectsAFloatAndTrailingCharacters) {
  Document document = load_text("a: 1.5\nb: 1e3\nc: 12kib\nd: ''\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.integer("a"); }).message(), "expected an integer, got '1.5'");
  EXPECT_EQ(input_error_of([&] { top.integer("b"); }).message(), "expected an integer, got '1e3'");
  EXPECT_EQ(input_error_of([&] { top.integer("c"); }).message(), "expected an integer, got '12kib'");
  EXPECT_EQ(input_error_of([&] { top.integer("d"); }).message(), "expected an integer, got ''");
}

TEST(MapReader, IntegerTooLargeForSixtyFourBitsIsRejected) {
  Document document = load_text("a: 99999999999999999999\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.integer("a"); }).message(),
            "expected an integer, got '99999999999999999999'");
}

TEST(MapReader, IntegersAreSpelledAsInTheYamlCoreSchema) {
  // YAML 1.2 reads 010 as ten (octal is 0o10); a C-style octal reading would silently turn kib: 010 into 8.
  Document document = load_text("a: 010\nb: 0x40\nc: 0o17\nd: -12\ne: +5\nf: 0x\ng: 0x-1\nh: 08\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.integer("a"), 10);
  EXPECT_EQ(top.integer("b"), 64);
  EXPECT_EQ(top.integer("c"), 15);
  EXPECT_EQ(top.integer("d"), -12);
  EXPECT_EQ(top.integer("e"), 5);
  EXPECT_EQ(input_error_of([&] { top.integer("f"); }).message(), "expected an integer, got '0x'");
  EXPECT_EQ(input_error_of([&] { top.integer("g"); }).message(), "expected an integer, got '0x-1'");
  EXPECT_EQ(top.integer("h"), 8);
}

TEST(MapReader, PositiveIntegerRejectsZeroAndNegatives) {
  Document document = load_text("rows: 0\ncols: -3\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] { top.positive_integer("rows"); }).what()),
            "a.yaml:1:7: rows: expected a positive integer, got 0"
            "\n  hint: this field counts or sizes something: at least 1");
  EXPECT_EQ(input_error_of([&] { top.positive_integer("cols"); }).message(),
            "expected a positive integer, got -3");
}

TEST(MapReader, PositiveIntegerWithDefaultChecksAGivenValue) {
  Document document = load_text("a: 0\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.positive_integer("a", 4); }).message(),
            "expected a positive integer, got 0");
  EXPECT_EQ(top.positive_integer("b", 4), 4);
}

TEST(MapReader, NonnegativeIntegerAcceptsZeroAndRejectsNegatives) {
  Document document = load_text("a: 0\nb: -1\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.nonnegative_integer("a"), 0);
  EXPECT_EQ(input_error_of([&] { top.nonnegative_integer("b"); }).message(),
            "expected an integer >= 0, got -1");
  EXPECT_EQ(input_error_of([&] { top.nonnegative_integer("b", 3); }).message(),
            "expected an integer >= 0, got -1");
}

TEST(MapReader, MappingOrListWhereAScalarIsExpectedIsAnError) {
  Document document = load_text("a: {x: 1}\nb: [1, 2]\nc: {x: 1}\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] { top.integer("a"); }).what()),
            "a.yaml:1:4: a: expected an integer, got a mapping"
            "\n  hint: write a single value after the key, not a list or a mapping");
  EXPECT_EQ(input_error_of([&] { top.number("b"); }).message(), "expected a number, got a list");
  EXPECT_EQ(input_error_of([&] { top.string("c"); }).message(), "expected a string, got a mapping");
}

TEST(MapReader, NumbersAcceptIntegersAndExponentsAndRejectText) {
  Document document = load_text("a: 2\nb: 1.5e-3\nc: fast\nd: 0\ne: -0.5\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.number("a"), 2.0);
  EXPECT_EQ(top.number("b"), 1.5e-3);
  EXPECT_EQ(input_error_of([&] { top.number("c"); }).message(), "expected a number, got 'fast'");
  EXPECT_EQ(input_error_of([&] { top.positive_number("d"); }).message(), "expected a positive number, got 0");
  EXPECT_EQ(input_error_of([&] { top.nonnegative_number("e", 1.0); }).message(),
            "expected a number >= 0, got -0.5");
  EXPECT_EQ(top.nonnegative_number("d", 1.0), 0.0);
}

TEST(MapReader, NumbersMustBeFinite) {
  // std::stod reads these; a clock of 'inf' GHz or an energy of 'nan' pJ would poison every derived figure.
  Document document = load_text("a: inf\nb: nan\nc: -infinity\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.positive_number("a"); }).message(), "expected a number, got 'inf'");
  EXPECT_EQ(input_error_of([&] { top.nonnegative_number("b", 1.0); }).message(),
            "expected a number, got 'nan'");
  EXPECT_EQ(input_error_of([&] { top.number("c"); }).message(), "expected a number, got '-infinity'");
}

TEST(MapReader, BooleansAreTrueOrFalseOnly) {
  Document document = load_text("a: true\nb: false\nc: yes\nd: 1\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_TRUE(top.boolean("a"));
  EXPECT_FALSE(top.boolean("b"));
  EXPECT_EQ(std::string(input_error_of([&] { top.boolean("c"); }).what()),
            "a.yaml:3:4: c: expected true or false, got 'yes'"
            "\n  hint: write true or false (yes, on and 1 are not booleans here)");
  EXPECT_EQ(input_error_of([&] { top.boolean("d", true); }).message(), "expected true or false, got '1'");
  EXPECT_TRUE(top.boolean("absent", true));
  EXPECT_FALSE(top.boolean("absent_too", false));
}

TEST(MapReader, StringsReturnTheScalarText) {
  Document document = load_text("name: tpu-v1\nnumber: 12\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.string("name"), "tpu-v1");
  EXPECT_EQ(top.string("number"), "12");
  EXPECT_EQ(top.string("absent", "fallback"), "fallback");
}

TEST(MapReader, ChoiceRejectsAnUnknownNameWithDidYouMean) {
  Document document = load_text("placement: perimetre\nkind: gemm\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] {
                          top.choice("placement", {"perimeter", "west"});
                        }).what()),
            "a.yaml:1:12: placement: 'perimetre' is not one of perimeter or west; did you mean 'perimeter'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
  EXPECT_EQ(top.choice("kind", {"gemm"}), "gemm");
  EXPECT_EQ(top.choice("absent", {"perimeter", "west"}, "west"), "west");
}

TEST(MapReader, ChoiceListReadsNamesInOrder) {
  Document document = load_text("dataflows: [os, ws]\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.choice_list("dataflows", {"ws", "os", "is"}, {"ws"}), (std::vector<std::string>{"os", "ws"}));
  EXPECT_EQ(top.choice_list("absent", {"ws", "os", "is"}, {"is"}), (std::vector<std::string>{"is"}));
}

TEST(MapReader, ChoiceListRejectsADuplicateAtTheSecondOccurrence) {
  Document document = load_text("dataflows: [ws, os, ws]\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] {
                          top.choice_list("dataflows", {"ws", "os", "is"}, {});
                        }).what()),
            "a.yaml:1:21: dataflows[2]: 'ws' is listed twice"
            "\n  hint: list each name once");
}

TEST(MapReader, ChoiceListRejectsAnUnknownElementWithDidYouMean) {
  Document document = load_text("dataflows: [ws, sw]\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(std::string(input_error_of([&] {
                          top.choice_list("dataflows", {"ws", "os", "is"}, {});
                        }).what()),
            "a.yaml:1:17: dataflows[1]: 'sw' is not one of ws, os or is; did you mean 'ws'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
}

TEST(MapReader, ChoiceListRejectsAScalarAnEmptyListAndANestedList) {
  Document document = load_text("a: ws\nb: []\nc: [[ws]]\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.choice_list("a", {"ws"}, {}); }).message(),
            "expected a list, got a scalar");
  EXPECT_EQ(input_error_of([&] { top.choice_list("b", {"ws"}, {}); }).message(),
            "expected at least one element");
  EXPECT_EQ(input_error_of([&] { top.choice_list("c", {"ws"}, {}); }).message(),
            "expected a name, got a list");
}

TEST(MapReader, MapListNamesEachElementByIndex) {
  Document document = load_text(kCore, "w.yaml");
  MapReader top(document.root, document, "");
  std::vector<MapReader> ops = top.map_list("ops");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].path(), "ops[1]");
  EXPECT_EQ(ops[1].string("name"), "ffn2");
  EXPECT_EQ(std::string(input_error_of([&] { ops[1].positive_integer("k"); }).what()),
            "w.yaml:9:5: ops[1].k: required field is missing\n  hint: add 'k:' to 'ops[1]'");
}

TEST(MapReader, MapListRejectsAMappingAndAnEmptyList) {
  Document document = load_text("a: {x: 1}\nb: []\n", "a.yaml");
  MapReader top(document.root, document, "");
  EXPECT_EQ(input_error_of([&] { top.map_list("a"); }).message(), "expected a list, got a mapping");
  EXPECT_EQ(input_error_of([&] { top.map_list("b"); }).message(), "expected at least one element");
}

// ---------------------------------------------------------------------------------------------------------
// Files

TEST(LoadFile, ReadsAFile) {
  TempFile file("config_test_ok.yaml", "name: x\nrows: 4\n");
  Document document = load_file(file.path());
  EXPECT_EQ(document.file, file.path());
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.integer("rows"), 4);
  EXPECT_EQ(top.location("rows").str(), file.path() + ":2:7");
}

TEST(LoadFile, MalformedYamlNamesFileLineAndColumn) {
  TempFile file("config_test_malformed.yaml", "name: x\ncore: [1, 2\nrows: 3\n");
  const InputError error = input_error_of([&] { load_file(file.path()); });
  EXPECT_EQ(error.where().file, file.path());
  EXPECT_EQ(error.where().line, 3);  // where yaml-cpp notices the unclosed bracket
  EXPECT_GT(error.where().column, 0);
  EXPECT_EQ(error.message().rfind("malformed YAML: ", 0), 0u) << error.message();
  EXPECT_EQ(error.hint(), "check the indentation and the brackets around this position");
  EXPECT_EQ(std::string(error.what()).rfind(error.where().str() + ": malformed YAML: ", 0), 0u)
      << error.what();
}

TEST(LoadFile, BadIndentationIsMalformed) {
  const InputError error = input_error_of([] { load_text("a:\n  b: 1\n c: 2\n", "i.yaml"); });
  EXPECT_EQ(error.where().line, 3);
  EXPECT_EQ(error.message(), "malformed YAML: end of map not found");
}

TEST(LoadFile, SecondDocumentIsAnErrorNotIgnored) {
  // Two configs pasted into one file: the second one must not be dropped silently.
  EXPECT_EQ(std::string(input_error_of([] { load_text("rows: 1\n---\nrows: 2\n", "two.yaml"); }).what()),
            "two.yaml:3:1: expected one YAML document, found 2\n"
            "  hint: a line '---' starts a new document; one file holds one config");
  // Document markers around one document are fine.
  Document marked = load_text("---\nrows: 3\n...\n", "one.yaml");
  EXPECT_EQ(MapReader(marked.root, marked, "").integer("rows"), 3);
  Document trailing = load_text("rows: 4\n---\n", "one.yaml");
  EXPECT_EQ(MapReader(trailing.root, trailing, "").integer("rows"), 4);
}

TEST(LoadFile, MissingFileSaysSoAndWhereConfigsLive) {
  const InputError error = input_error_of([] { load_file("/nonexistent/tessera/x.yaml"); });
  EXPECT_EQ(std::string(error.what()),
            "/nonexistent/tessera/x.yaml: cannot open file: No such file or directory\n"
            "  hint: check the path; shipped configs are under configs/arch and configs/workloads");
  EXPECT_EQ(error.where().line, 0);
}

// ---------------------------------------------------------------------------------------------------------
// --set overrides

TEST(ApplyOverride, ReplacesAScalar) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram.kib=128");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.map("core").map("sram").integer("kib"), 128);
}

TEST(ApplyOverride, ErrorInAnOverriddenValueNamesTheArgument) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram.kib=abc");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("core").map("sram");
  EXPECT_EQ(std::string(input_error_of([&] { sram.integer("kib"); }).what()),
            "--set core.sram.kib=abc: core.sram.kib: expected an integer, got 'abc'"
            "\n  hint: write a whole number: decimal (64) or hexadecimal (0x40), within 64 bits");
  // A field of the same mapping that was not overridden still points into the file.
  EXPECT_EQ(sram.location("banks").str(), "arch.yaml:5:12");
}

TEST(ApplyOverride, ParsesTheValueAsYamlSoListsWork) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.dataflows=[os, is, ws]");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.map("core").choice_list("dataflows", {"ws", "os", "is"}, {}),
            (std::vector<std::string>{"os", "is", "ws"}));
}

TEST(ApplyOverride, ErrorInAnElementOfAnOverriddenListNamesTheArgument) {
  // The element's mark is a position in the argument's text, not in arch.yaml.
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.dataflows=[ws,xs]");
  MapReader top(document.root, document, "");
  MapReader core = top.map("core");
  EXPECT_EQ(std::string(input_error_of([&] {
                          core.choice_list("dataflows", {"ws", "os", "is"}, {});
                        }).what()),
            "--set core.dataflows=[ws,xs]: core.dataflows[1]: 'xs' is not one of ws, os or is; did you mean "
            "'ws'?"
            "\n  hint: names are case-sensitive; pick one of those listed");
}

TEST(ApplyOverride, ErrorInsideAnOverriddenMappingNamesTheArgument) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram={kib: 0, banks: 4}");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("core").map("sram");
  EXPECT_EQ(input_error_of([&] { sram.positive_integer("kib"); }).where().str(),
            "--set core.sram={kib: 0, banks: 4}");
  EXPECT_EQ(input_error_of([&] { sram.integer("bank_width_bytes"); }).where().str(),
            "--set core.sram={kib: 0, banks: 4}");
}

TEST(ApplyOverride, CreatesAMissingPath) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.dma.engines=4");
  MapReader top(document.root, document, "");
  MapReader dma = top.map("core").map("dma");
  EXPECT_EQ(dma.integer("engines"), 4);
  // The mapping the argument created has no place in the file either.
  EXPECT_EQ(std::string(input_error_of([&] { dma.number("bytes_per_cycle"); }).what()),
            "--set core.dma.engines=4: core.dma.bytes_per_cycle: required field is missing\n"
            "  hint: add 'bytes_per_cycle:' to 'core.dma'");
}

TEST(ApplyOverride, CreatedUnknownKeyIsReportedAtTheArgument) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.srma.kib=4");
  MapReader top(document.root, document, "");
  MapReader core = top.map("core");
  core.map("sram");
  core.choice_list("dataflows", {"ws", "os", "is"}, {});
  EXPECT_EQ(std::string(input_error_of([&] { core.finish(); }).what()),
            "--set core.srma.kib=4: core.srma: unknown key; did you mean 'sram'?\n"
            "  hint: the README lists every field of this file");
}

TEST(ApplyOverride, MisspelledLastKeyIsReportedAtTheArgument) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram.bnaks=4");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("core").map("sram");
  sram.integer("kib");
  sram.integer("banks");
  EXPECT_EQ(std::string(input_error_of([&] { sram.finish(); }).what()),
            "--set core.sram.bnaks=4: core.sram.bnaks: unknown key; did you mean 'banks'?\n"
            "  hint: the README lists every field of this file");
}

TEST(ApplyOverride, FillsAMappingLeftEmptyInTheFile) {
  // "energy_pj:" with nothing under it reads as an empty mapping; --set must be able to add to it.
  Document document = load_text("name: x\nenergy_pj:\n", "arch.yaml");
  apply_override(document, "energy_pj.mac=0.25");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.map_or_empty("energy_pj").number("mac", 0.5), 0.25);
}

TEST(ApplyOverride, IndexesAListByPosition) {
  Document document = load_text(kCore, "w.yaml");
  apply_override(document, "ops.1.m=64");
  MapReader top(document.root, document, "");
  std::vector<MapReader> ops = top.map_list("ops");
  EXPECT_EQ(ops[0].integer("m"), 8);
  EXPECT_EQ(ops[1].integer("m"), 64);
}

TEST(ApplyOverride, SelectsAListElementByName) {
  Document document = load_text(kCore, "w.yaml");
  apply_override(document, "ops.ffn2.m=x");
  MapReader top(document.root, document, "");
  std::vector<MapReader> ops = top.map_list("ops");
  EXPECT_EQ(ops[0].integer("m"), 8);
  EXPECT_EQ(std::string(input_error_of([&] { ops[1].integer("m"); }).what()),
            "--set ops.ffn2.m=x: ops[1].m: expected an integer, got 'x'"
            "\n  hint: write a whole number: decimal (64) or hexadecimal (0x40), within 64 bits");
}

TEST(ApplyOverride, ListSelectorThatMatchesNothingIsAnError) {
  Document document = load_text(kCore, "w.yaml");
  EXPECT_EQ(std::string(input_error_of([&] { apply_override(document, "ops.5.m=1"); }).what()),
            "--set ops.5.m=1: ops.5.m: '5' selects no element of the list ops (2 elements)\n"
            "  hint: index from 0, or name an element by its 'name'");
  EXPECT_EQ(input_error_of([&] { apply_override(document, "ops.ffn3.m=1"); }).message(),
            "'ffn3' selects no element of the list ops (2 elements)");
}

TEST(ApplyOverride, ElementWhoseNameIsNotAScalarIsNotSelectedByName) {
  Document document = load_text("ops:\n  - {name: {a: 1}, m: 1}\n  - {m: 2}\n", "w.yaml");
  EXPECT_EQ(input_error_of([&] { apply_override(document, "ops.a.m=3"); }).message(),
            "'a' selects no element of the list ops (2 elements)");
}

TEST(ApplyOverride, EmptyValueIsAMissingFieldAtTheArgument) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram.kib=");
  MapReader top(document.root, document, "");
  MapReader sram = top.map("core").map("sram");
  EXPECT_EQ(
      std::string(input_error_of([&] { sram.integer("kib"); }).what()),
      "--set core.sram.kib=: core.sram.kib: required field is missing\n  hint: add 'kib:' to 'core.sram'");
}

TEST(ApplyOverride, PathThroughAScalarIsAnError) {
  Document document = load_text(kCore, "arch.yaml");
  EXPECT_EQ(std::string(input_error_of([&] { apply_override(document, "name.x=1"); }).what()),
            "--set name.x=1: name.x: 'name' is a scalar, not a mapping");
}

TEST(ApplyOverride, ArgumentWithoutEqualsOrKeyIsAnError) {
  Document document = load_text(kCore, "arch.yaml");
  EXPECT_EQ(std::string(input_error_of([&] { apply_override(document, "core.sram.kib"); }).what()),
            "--set core.sram.kib: expected key.path=value\n  hint: for example --set core.sram.kib=256");
  EXPECT_EQ(input_error_of([&] { apply_override(document, "=5"); }).message(), "expected key.path=value");
  EXPECT_EQ(std::string(input_error_of([&] { apply_override(document, "core..kib=1"); }).what()),
            "--set core..kib=1: core..kib: empty segment in the key path");
}

TEST(ApplyOverride, ValueThatIsNotYamlIsAnError) {
  Document document = load_text(kCore, "arch.yaml");
  const InputError error = input_error_of([&] { apply_override(document, "core.dataflows=[ws,"); });
  EXPECT_EQ(error.where().str(), "--set core.dataflows=[ws,");
  EXPECT_EQ(error.field(), "core.dataflows");
  EXPECT_EQ(error.message().rfind("the value is not valid YAML: ", 0), 0u) << error.message();
}

TEST(ApplyOverride, LaterArgumentWins) {
  Document document = load_text(kCore, "arch.yaml");
  apply_override(document, "core.sram.kib=128");
  apply_override(document, "core.sram.kib=256");
  MapReader top(document.root, document, "");
  EXPECT_EQ(top.map("core").map("sram").integer("kib"), 256);
}

TEST(ToYamlText, RoundTripsThroughTheReader) {
  Document document = load_text(kCore, "arch.yaml");
  Document again = load_text(to_yaml_text(document.root), "again.yaml");
  MapReader top(again.root, again, "");
  EXPECT_EQ(top.map("core").map("sram").integer("banks"), 16);
  EXPECT_EQ(top.map_list("ops")[1].string("name"), "ffn2");
}

}  // namespace
}  // namespace tessera::config
