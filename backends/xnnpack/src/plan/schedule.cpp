// SPDX-License-Identifier: BSD-3-Clause
// schedule.cpp - the steps (stages.h): runs of library nodes become one XNNPACK segment, each of
// pteron's own nodes a step of its own; then what each segment exchanges with the outside.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph.h"
#include "plan/stages.h"
#include "types.h"

namespace pteron {
namespace xnnpack {

// Schedule: alternately take every ready native node (one segment), then
// every ready own node (one step each), until all are placed.
bool schedule_steps(Delegate& d, PlanFacts& f, std::string* err) {
  const Graph& g = d.g;
  const size_t nn = g.nodes.size();
  std::vector<int> pending(nn, 0);
  std::vector<std::vector<uint32_t>> users(nn);
  for (size_t k = 0; k < nn; ++k)
    for (uint32_t v : g.nodes[k].inputs)
      if (f.producer[v] >= 0) {
        ++pending[k];
        users[size_t(f.producer[v])].push_back(uint32_t(k));
      }
  std::vector<char> done(nn, 0);
  size_t placed = 0;
  f.step_of.assign(nn, -1);
  while (placed < nn) {
    const size_t before = placed;
    for (int want_native = 1; want_native >= 0; --want_native) {
      Step seg;
      seg.native = want_native;
      bool progress = true;
      while (progress) {
        progress = false;
        for (size_t k = 0; k < nn; ++k) {
          if (done[k] || pending[k] != 0 || bool(f.native[k]) != bool(want_native)) continue;
          done[k] = 1;
          ++placed;
          for (uint32_t u : users[k]) --pending[u];
          if (want_native) {
            seg.nodes.push_back(uint32_t(k));
            f.step_of[k] = int(d.steps.size());
          } else {
            Step s;
            s.nodes.push_back(uint32_t(k));
            f.step_of[k] = int(d.steps.size());
            d.steps.push_back(s);
          }
          progress = true;
          break;
        }
      }
      if (want_native && !seg.nodes.empty()) {
        const int idx = int(d.steps.size());
        for (uint32_t k : seg.nodes) f.step_of[k] = idx;
        d.steps.push_back(std::move(seg));
      }
    }
    if (placed == before) {
      *err = "the graph has a cycle";
      return false;
    }
  }
  return true;
}

// Boundary values of each segment: what it exchanges with the outside.
void find_boundaries(Delegate& d, const PlanFacts& f) {
  const Graph& g = d.g;
  const size_t nv = g.values.size();
  for (size_t si = 0; si < d.steps.size(); ++si) {
    Step& s = d.steps[si];
    if (!s.native) continue;
    std::vector<char> seen(nv, 0);
    for (uint32_t k : s.nodes) {
      const Node& n = g.nodes[k];
      for (uint32_t v : n.inputs)
        if (!seen[v] && d.home[v] != Home::Constant && d.home[v] != Home::Internal) {
          seen[v] = 1;
          s.boundary.push_back(v);
          s.boutput.push_back(f.producer[v] >= 0 && f.step_of[size_t(f.producer[v])] == int(si));
        }
      for (uint32_t v : n.outputs)
        if (!seen[v] && d.home[v] != Home::Internal) {
          seen[v] = 1;
          s.boundary.push_back(v);
          s.boutput.push_back(1);
        }
    }
  }
}

}  // namespace xnnpack
}  // namespace pteron
