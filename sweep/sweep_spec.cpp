#include "sweep/sweep_spec.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "common/text.hpp"

namespace tessera::sweep {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kDataflows = {"ws", "os", "is", "rs"};

// A value as `--set path=value` takes it: a scalar as written, a list or mapping in flow style.
std::string value_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetMapFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

std::string resolve(const std::string& root, const std::string& path) {
  return fs::path(path).is_absolute() ? path : (fs::path(root) / path).lexically_normal().string();
}

void check_file(const std::string& path, const std::string& resolved, const SourceLocation& where,
                const std::string& field, const std::string& root) {
  std::error_code error;
  if (fs::is_regular_file(resolved, error)) return;
  throw InputError(where, field, fmt::format("'{}' is not a file", path),
                   fs::path(path).is_absolute()
                       ? "check the path"
                       : fmt::format("relative paths are read from the tessera checkout, {}", root));
}

std::vector<AxisValue> read_values(config::MapReader& grid, const std::string& key, const YAML::Node& list) {
  const std::string field = grid.field(key);
  std::vector<AxisValue> values;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string element = fmt::format("{}[{}]", field, i);
    const YAML::Node& value = list[i];
    if (value.IsNull() || (value.IsScalar() && value.Scalar().empty()))
      throw InputError(grid.location_of_mark(element, value.Mark()), element,
                       "expected a value, got nothing");
    values.push_back({value_text(value), grid.location_of_mark(element, value.Mark())});
  }
  if (values.empty()) grid.fail(key, "expected at least one value", "write the values as a list: [1, 2, 4]");
  return values;
}

}  // namespace

std::string SweepSpec::arch_path() const {
  return resolve(root, arch);
}

std::string SweepSpec::workload_path(size_t index) const {
  return resolve(root, workloads.at(index));
}

std::string SweepSpec::dataflow_option() const {
  if (dataflows.empty()) return "all";
  std::string joined;
  for (const std::string& dataflow : dataflows) joined += (joined.empty() ? "" : ",") + dataflow;
  return joined;
}

SweepSpec sweep_from_yaml(const config::Document& document, const std::string& root) {
  config::MapReader top(document.root, document, "");
  SweepSpec spec;
  spec.file = document.file;
  spec.root = root;
  if (top.has("parameter") || top.has("values") || top.has("workload"))
    top.fail(top.has("parameter") ? "parameter"
             : top.has("values")  ? "values"
                                  : "workload",
             "the one-parameter sweep format is gone",
             "write 'workloads: [FILE]' and 'grid: {PATH: [VALUES]}' (README, \"Sweeps\")");
  spec.name = top.string("name");
  spec.arch = top.string("arch");
  spec.arch_location = top.location("arch");
  check_file(spec.arch, spec.arch_path(), spec.arch_location, "arch", root);
  spec.workloads = top.string_list("workloads", &spec.workload_locations);
  for (size_t i = 0; i < spec.workloads.size(); ++i) {
    const std::string field = fmt::format("workloads[{}]", i);
    check_file(spec.workloads[i], spec.workload_path(i), spec.workload_locations[i], field, root);
    const std::string stem = fs::path(spec.workloads[i]).stem().string();
    for (size_t j = 0; j < i; ++j)
      if (spec.workload_stems[j] == stem)
        throw InputError(spec.workload_locations[i], field,
                         fmt::format("a second workload file named '{}'", stem),
                         "each workload's results are filed under its file name: rename one");
    spec.workload_stems.push_back(stem);
  }
  spec.dataflows_location = top.location("dataflows");
  spec.dataflows = top.choice_list("dataflows", kDataflows, {});
  spec.timing_only = top.boolean("timing_only", true);

  config::MapReader grid = top.map_or_empty("grid");
  const std::vector<std::string> paths = grid.keys();
  std::vector<std::string> zip_targets(paths.size());
  std::vector<SourceLocation> zip_locations(paths.size());
  for (size_t a = 0; a < paths.size(); ++a) {
    const std::string& path = paths[a];
    Axis axis;
    axis.path = path;
    axis.location = grid.location(path);
    if (path.find_first_of(" =") != std::string::npos || path.front() == '.' || path.back() == '.' ||
        path.find("..") != std::string::npos)
      throw InputError(axis.location, grid.field(path), "expected a --set path such as core.sram.kib",
                       "dot-separated field names, no blanks or '='");
    const YAML::Node value = grid.node(path);
    if (value.IsSequence()) {
      axis.values = read_values(grid, path, value);
    } else if (value.IsMap()) {
      config::MapReader zip(value, document, grid.field(path));
      zip_targets[a] = zip.string("zip");
      zip_locations[a] = zip.location("zip");
      if (zip.has("values")) axis.values = read_values(zip, "values", zip.node("values"));
      zip.finish();
    } else {
      grid.fail(path, "expected a list of values or {zip: AXIS}",
                "core.sram.kib: [128, 512] or core.pe_array.cols: {zip: core.pe_array.rows}");
    }
    spec.axes.push_back(std::move(axis));
  }
  // Zips may name an axis written later, or one that is itself zipped: follow to the grid axis.
  for (size_t a = 0; a < paths.size(); ++a) {
    if (zip_targets[a].empty()) continue;
    const std::string field = grid.field(paths[a]) + ".zip";
    size_t target = a;
    std::set<size_t> seen = {a};
    for (std::string name = zip_targets[a]; !name.empty();) {
      const auto found = std::find(paths.begin(), paths.end(), name);
      if (found == paths.end())
        throw InputError(zip_locations[a], field, fmt::format("'{}' is not an axis of the grid", name),
                         "zip names another key of 'grid'" + did_you_mean(name, paths));
      target = static_cast<size_t>(found - paths.begin());
      if (!seen.insert(target).second)
        throw InputError(zip_locations[a], field, "the zips go round in a circle",
                         "one axis of a zipped group lists its values; the others zip to it");
      name = zip_targets[target];
    }
    Axis& axis = spec.axes[a];
    axis.follows = static_cast<int>(target);
    const std::vector<AxisValue>& leader = spec.axes[target].values;
    if (axis.values.empty()) {
      // {zip: AXIS} alone: the same values as that axis (cols move with rows).
      for (const AxisValue& value : leader) axis.values.push_back({value.text, zip_locations[a]});
    } else if (axis.values.size() != leader.size()) {
      throw InputError(axis.values.front().location, grid.field(paths[a]) + ".values",
                       fmt::format("{} values, but '{}' has {}", axis.values.size(), spec.axes[target].path,
                                   leader.size()),
                       "a zipped axis has one value per value of the axis it follows");
    }
  }
  top.finish();

  size_t points = 1;
  for (const Axis& axis : spec.axes) {
    if (axis.follows >= 0) continue;
    if (points > kMaxPoints / axis.values.size())
      throw InputError(axis.location, grid.field(axis.path),
                       fmt::format("the grid has more than {} points", kMaxPoints),
                       "split the study into several sweeps, or zip axes that move together");
    points *= axis.values.size();
  }
  return spec;
}

uint64_t stable_hash(const std::string& text, uint64_t seed) {
  uint64_t hash = seed;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::vector<Point> expand(const SweepSpec& spec) {
  size_t count = 1;
  for (const Axis& axis : spec.axes)
    if (axis.follows < 0) count *= axis.values.size();
  const int width = static_cast<int>(std::to_string(count - 1).size());
  // What every point runs besides its values: part of each id, so that a changed sweep gets new ids.
  std::string common = spec.arch + "\n" + spec.dataflow_option() + (spec.timing_only ? "\ntiming\n" : "\n");
  for (const std::string& workload : spec.workloads) common += workload + "\n";

  std::vector<Point> points(count);
  for (size_t index = 0; index < count; ++index) {
    Point& point = points[index];
    point.index = index;
    point.value_index.assign(spec.axes.size(), 0);
    size_t rest = index;
    for (size_t a = spec.axes.size(); a-- > 0;) {
      if (spec.axes[a].follows >= 0) continue;
      point.value_index[a] = rest % spec.axes[a].values.size();
      rest /= spec.axes[a].values.size();
    }
    for (size_t a = 0; a < spec.axes.size(); ++a)
      if (spec.axes[a].follows >= 0) point.value_index[a] = point.value_index[spec.axes[a].follows];
    std::string described = common;
    for (const std::string& assignment : assignments(spec, point)) described += assignment + "\n";
    point.id = fmt::format("{:0{}}-{:08x}", index, width, stable_hash(described) & 0xffffffffu);
  }
  return points;
}

std::vector<std::string> assignments(const SweepSpec& spec, const Point& point) {
  std::vector<std::string> sets;
  for (size_t a = 0; a < spec.axes.size(); ++a)
    sets.push_back(spec.axes[a].path + "=" + spec.axes[a].values[point.value_index[a]].text);
  return sets;
}

std::vector<std::string> worker_arguments(const SweepSpec& spec, const Point& point, size_t workload) {
  std::vector<std::string> arguments = {"run", "--arch", spec.arch_path(), "--workload",
                                        spec.workload_path(workload)};
  for (const std::string& assignment : assignments(spec, point)) {
    arguments.push_back("--set");
    arguments.push_back(assignment);
  }
  for (const char* fixed : {"--dataflow", "", "--format", "json", "--quiet", "--threads", "1"})
    arguments.push_back(*fixed ? fixed : spec.dataflow_option());
  if (spec.timing_only) arguments.push_back("--timing-only");
  return arguments;
}

InputError locate_in_sweep(const SweepSpec& spec, const Point& point, const InputError& error) {
  const std::string values = [&] {
    std::string joined;
    for (const std::string& assignment : assignments(spec, point))
      joined += (joined.empty() ? "" : ", ") + assignment;
    return joined;
  }();
  const std::string hint = error.hint().empty() ? "" : error.hint();
  const std::string what = error.field().empty() ? error.message() : error.field() + ": " + error.message();
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    const Axis& axis = spec.axes[a];
    const size_t v = point.value_index[a];
    // apply_override and route_overrides name the argument ("--set core.sram.kib=64") as the place.
    if (error.where().file != "--set " + axis.path + "=" + axis.values[v].text) continue;
    const bool path_is_wrong = error.message().find("unknown key") != std::string::npos ||
                               error.message().find("no machine or workload field") != std::string::npos ||
                               error.message().find("selects no element") != std::string::npos ||
                               error.message().find("not a mapping") != std::string::npos ||
                               error.message().find("name a field after") != std::string::npos ||
                               error.message().find("a field of both") != std::string::npos;
    if (path_is_wrong)
      return InputError(axis.location, "grid." + axis.path,
                        error.field() == axis.path ? error.message() : what, hint);
    return InputError(axis.values[v].location, fmt::format("grid.{}[{}]", axis.path, v),
                      fmt::format("{} (point {}: {})", what, point.index, values), hint);
  }
  // Not one axis's doing: a combination of values, or the machine or workload file itself.
  return InputError(
      error.where(), error.field(),
      fmt::format("{} (sweep {}, point {}: {})", error.message(), spec.file, point.index, values), hint);
}

}  // namespace tessera::sweep
