// The network on chip as the simulator and the mapper ask it (DESIGN.md, "Timing"): the simulator's fabric
// books the links of its routes and multicast trees and counts their hops; the cost model asks for the mean
// hops of a DRAM round trip and the share of the DRAM's bytes the busiest link carries. Both ask the same
// object, so an estimate and a simulation see one network. A model is chosen by the machine's `noc.impl`
// from a registry of names: "mesh", the 2-D mesh with dimension-order (XY) routing of arch/topology.hpp, is
// the one tessera ships; a test registers a double of its own (tests/sim/noc_seam_test.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arch/spec.hpp"

namespace tessera::arch {

// A multicast tree from one router to a set of destinations: each link once, after its parent (parent -1:
// the source router), the link each destination's copy arrives by (-1: the destination is the source), and
// the longest route's hops.
struct MulticastTree {
  std::vector<std::pair<int, int>> links;  // (link, index of its parent in `links` or -1)
  std::vector<int> leaves;                 // per destination, the index in `links` its copy leaves by
  int depth = 0;
};

class NocModel {
 public:
  virtual ~NocModel() = default;
  // Directed links, numbered 0 .. links() - 1 (the simulator books each on its own calendar).
  virtual int links() const = 0;
  // Appends the links of the route from router `from` to router `to` (core indices: a core's router), in
  // the order a packet takes them; none when from == to.
  virtual void append_route(int from, int to, std::vector<int>& route) const = 0;
  // The router DRAM channel `channel` is attached to.
  virtual int channel_router(int channel) const = 0;

  // The tree of routes from `from` to each of `destinations`: by default their union, a shared prefix once.
  virtual MulticastTree multicast_tree(int from, const std::vector<int>& destinations) const;
  // The mean hops from a DRAM channel's router to a core, over every channel and core: what a load's round
  // trip crosses on average.
  virtual double average_dram_hops() const;
  // The share of one channel-wide stream's bytes the busiest link carries when cores 0 .. used - 1 each read
  // an equal part from every channel (1 when one link carries everything, 0 with no links used).
  virtual double hottest_link_share(int used) const;

  int hops(int from, int to) const;

 protected:
  explicit NocModel(const ArchSpec& spec) : spec_(spec) {}
  const ArchSpec& spec() const { return spec_; }

 private:
  ArchSpec spec_;
};

using NocFactory = std::function<std::unique_ptr<NocModel>(const ArchSpec&)>;

// The model `spec.noc.impl` names.
std::unique_ptr<NocModel> make_noc(const ArchSpec& spec);
// The names a machine may give `noc.impl`, in registration order ("mesh" first).
std::vector<std::string> noc_impl_names();
// The mean hops of a DRAM round trip on `spec`'s network (NocModel::average_dram_hops), remembered per
// thread for the last network asked about: the cost model asks for every vector pass it scores.
double dram_round_trip_hops(const ArchSpec& spec);
// NocModel::hottest_link_share(used) on `spec`'s network, remembered likewise: the busiest link's share of a
// load spread evenly over the DRAM channels and `used` cores (cores 0 .. used - 1).
double dram_hottest_link_share(const ArchSpec& spec, int used);
// Adds a model under `name` (replacing one of that name): a test's double, or a new network.
void register_noc(const std::string& name, NocFactory factory);

}  // namespace tessera::arch
