// A what-if sweep (configs/sweeps/*.yaml, issue 16): one machine, workloads, and a grid of --set paths with a
// list of values each; a zipped axis moves with another instead of multiplying the grid. The spec is parsed
// and checked here; every point's machine and workload are built by the caller exactly as `tessera run --set`
// builds them (cli/sweep_command.cpp), so a bad path or value is found before anything runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/error.hpp"

namespace tessera::sweep {

// The most design points one sweep file may expand to: far past any study one machine or cluster runs, and
// few enough that the points' records and the validation of every point stay small.
constexpr size_t kMaxPoints = 100000;

struct AxisValue {
  std::string text;         // as a --set value: "64", "[ws, os]"
  SourceLocation location;  // where the sweep file writes it (a zip's copied values: the zip)
};

struct Axis {
  std::string path;  // a --set path: core.sram.kib, dram.bandwidth_gbps, ops.ffn1.m, arch.name
  SourceLocation location;
  std::vector<AxisValue> values;
  int follows = -1;  // the grid axis this one is zipped to (its index in `axes`); -1: a grid axis of its own
};

struct SweepSpec {
  std::string file;  // the sweep file, as given
  std::string name;
  std::string arch;  // as written; relative paths are read from `root`
  SourceLocation arch_location;
  std::vector<std::string> workloads;  // as written
  std::vector<SourceLocation> workload_locations;
  std::vector<std::string> workload_stems;  // file names without .yaml: each job's folder under a point
  std::vector<std::string> dataflows;       // empty: every dataflow the machine supports
  SourceLocation dataflows_location;
  std::vector<Axis> axes;  // in file order; the CSV's parameter columns
  bool timing_only = true;
  std::string root;  // the folder relative paths are read from: the tessera checkout

  std::string arch_path() const;                  // the machine file to read
  std::string workload_path(size_t index) const;  // the workload file to read
  std::string dataflow_option() const;            // the worker's --dataflow: "all" or "ws,os"
};

// Reads a sweep document; relative arch and workload paths are resolved against `root`.
SweepSpec sweep_from_yaml(const config::Document& document, const std::string& root);

struct Point {
  size_t index = 0;
  std::vector<size_t> value_index;  // per axis, into Axis::values
  std::string id;                   // "0007-1a2b3c4d": the index and a hash of what the point runs
};

// The cartesian product of the grid axes, the first axis outermost (the last varies fastest); zipped axes
// take the position of the axis they follow.
std::vector<Point> expand(const SweepSpec& spec);

// The point's --set arguments ("core.sram.kib=512"), one per axis.
std::vector<std::string> assignments(const SweepSpec& spec, const Point& point);

// The arguments after the binary that run job (point, workload) as one `tessera run` process.
std::vector<std::string> worker_arguments(const SweepSpec& spec, const Point& point, size_t workload);

// An error found while building a point's machine or workload from `assignments`, moved to the place in the
// sweep file that caused it: the axis value (or the axis key when the path itself is wrong), naming the
// point.
InputError locate_in_sweep(const SweepSpec& spec, const Point& point, const InputError& error);

// 64-bit FNV-1a: stable across runs and machines (std::hash is neither).
uint64_t stable_hash(const std::string& text, uint64_t seed = 1469598103934665603ull);

}  // namespace tessera::sweep
