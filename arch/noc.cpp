#include "arch/noc.hpp"

#include <algorithm>
#include <mutex>

#include "arch/topology.hpp"
#include "common/error.hpp"

namespace tessera::arch {

namespace {

// The 2-D mesh: four directed links a router (link_index), XY routes, DRAM channels on the perimeter or the
// west edge (arch/topology.hpp).
class MeshNoc final : public NocModel {
 public:
  explicit MeshNoc(const ArchSpec& spec) : NocModel(spec) {}
  int links() const override { return spec().mesh.cores() * kDirections; }
  void append_route(int from, int to, std::vector<int>& route) const override {
    append_xy_route(core_coord(from, spec().mesh), core_coord(to, spec().mesh), spec().mesh, route);
  }
  int channel_router(int channel) const override {
    return core_index(dram_channel_router(channel, spec()), spec().mesh);
  }
  double average_dram_hops() const override { return arch::average_dram_hops(spec()); }
};

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, NocFactory>> models = {
      {"mesh", [](const ArchSpec& spec) { return std::make_unique<MeshNoc>(spec); }}};
};

Registry& registry() {
  static Registry made;
  return made;
}

}  // namespace

MulticastTree NocModel::multicast_tree(int from, const std::vector<int>& destinations) const {
  MulticastTree tree;
  std::vector<int> route;
  for (int destination : destinations) {
    route.clear();
    append_route(from, destination, route);
    int parent = -1;
    for (int link : route) {
      int entry = -1;
      for (size_t i = 0; i < tree.links.size(); ++i)
        if (tree.links[i].first == link) entry = static_cast<int>(i);
      if (entry < 0) {
        tree.links.emplace_back(link, parent);
        entry = static_cast<int>(tree.links.size()) - 1;
      }
      parent = entry;
    }
    tree.leaves.push_back(parent);
    tree.depth = std::max(tree.depth, static_cast<int>(route.size()));
  }
  return tree;
}

double NocModel::average_dram_hops() const {
  double hops_sum = 0;
  for (int channel = 0; channel < spec_.dram.channels; ++channel)
    for (int core = 0; core < spec_.mesh.cores(); ++core) hops_sum += hops(channel_router(channel), core);
  return hops_sum / (static_cast<double>(spec_.dram.channels) * spec_.mesh.cores());
}

double NocModel::hottest_link_share(int used) const {
  std::vector<double> load(static_cast<size_t>(links()), 0.0);
  std::vector<int> route;
  for (int core = 0; core < used; ++core)
    for (int channel = 0; channel < spec_.dram.channels; ++channel) {
      route.clear();
      append_route(channel_router(channel), core, route);
      for (int link : route) load[static_cast<size_t>(link)] += 1.0 / spec_.dram.channels;
    }
  return load.empty() ? 0.0 : *std::max_element(load.begin(), load.end());
}

int NocModel::hops(int from, int to) const {
  std::vector<int> route;
  append_route(from, to, route);
  return static_cast<int>(route.size());
}

std::unique_ptr<NocModel> make_noc(const ArchSpec& spec) {
  Registry& made = registry();
  const std::lock_guard<std::mutex> lock(made.mutex);
  for (const auto& [name, factory] : made.models)
    if (name == spec.noc.impl) return factory(spec);
  TESSERA_ASSERT(false, "a machine's noc.impl is a registered model (the reader checks it)");
  return nullptr;
}

namespace {

// What the cost model asks of the network of the last machine this thread asked about: its DRAM round trip's
// hops, and the hottest link's share per number of cores used (computed when first asked).
struct KnownNetwork {
  std::string impl;
  int rows = 0, cols = 0, channels = 0;
  DramPlacement placement = DramPlacement::perimeter;
  std::unique_ptr<NocModel> noc;
  double hops = 0;
  std::vector<double> shares;  // per cores used - 1; negative: not asked yet
};

KnownNetwork& known_network(const ArchSpec& spec) {
  thread_local KnownNetwork known;
  if (!(known.noc && known.impl == spec.noc.impl && known.rows == spec.mesh.rows &&
        known.cols == spec.mesh.cols && known.channels == spec.dram.channels &&
        known.placement == spec.dram.placement)) {
    known.impl = spec.noc.impl;
    known.rows = spec.mesh.rows, known.cols = spec.mesh.cols, known.channels = spec.dram.channels;
    known.placement = spec.dram.placement;
    known.noc = make_noc(spec);
    known.hops = known.noc->average_dram_hops();
    known.shares.assign(static_cast<size_t>(spec.mesh.cores()), -1.0);
  }
  return known;
}

}  // namespace

double dram_round_trip_hops(const ArchSpec& spec) {
  return known_network(spec).hops;
}

double dram_hottest_link_share(const ArchSpec& spec, int used) {
  KnownNetwork& known = known_network(spec);
  const size_t at = static_cast<size_t>(std::clamp(used, 1, spec.mesh.cores()) - 1);
  if (known.shares[at] < 0) known.shares[at] = known.noc->hottest_link_share(static_cast<int>(at) + 1);
  return known.shares[at];
}

std::vector<std::string> noc_impl_names() {
  Registry& made = registry();
  const std::lock_guard<std::mutex> lock(made.mutex);
  std::vector<std::string> names;
  for (const auto& entry : made.models) names.push_back(entry.first);
  return names;
}

void register_noc(const std::string& name, NocFactory factory) {
  Registry& made = registry();
  const std::lock_guard<std::mutex> lock(made.mutex);
  for (auto& entry : made.models)
    if (entry.first == name) {
      entry.second = std::move(factory);
      return;
    }
  made.models.emplace_back(name, std::move(factory));
}

}  // namespace tessera::arch
