// SPDX-License-Identifier: BSD-3-Clause
// graph.cpp - the graph passes' view of a method at load (pteron/kernel.h,
// "graph passes"): one chain's instructions, what is known of each value, and
// the replacement of a run of kernel calls by a region the executor calls
// instead (executor.cpp).
//
// Passes run after every operator and delegate was resolved and every
// delegate initialised, so a method whose load fails is never rewritten, and
// a pass sees exactly the kernels the method would call.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "method.h"

struct pteron_graph {
  pteron_method* m = nullptr;
  size_t chain = 0;
  // Per value: PTERON_GRAPH_* bits (without an int list's items).
  std::vector<uint32_t> flags;
  // Per value: argument slots that name it, per chain and instruction.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> readers;
  // Per value: the kernel calls that write it (it is named twice, as the out
  // argument and the return value, or is a runtime operator's last argument).
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> writers;
  bool written(size_t v) const { return !writers[v].empty(); }
  std::string scratch;  // the operator name pteron_graph_operator returns
  std::string overload;
};

namespace pteron {
namespace {

bool inside(const void* p, const AlignedBlock& b) {
  const auto* q = static_cast<const unsigned char*>(p);
  const auto* d = static_cast<const unsigned char*>(b.data);
  return b.data && q >= d && q < d + b.size;
}

// A runtime operator that writes an Int (its last argument) at execute.
bool writes_int(const std::string& op) {
  return op.rfind("executorch_prim::", 0) == 0 || op.rfind("aten::sym_", 0) == 0 ||
         op.rfind("aten::_local_scalar_dense", 0) == 0;
}

void describe(pteron_graph* g) {
  pteron_method* m = g->m;
  g->flags.assign(m->values.size(), 0);
  g->readers.assign(m->values.size(), {});
  g->writers.assign(m->values.size(), {});
  for (size_t i = 0; i < m->values.size(); ++i) {
    const pteron_value& v = m->values[i];
    if (v.tag != PTERON_VALUE_TENSOR || !v.u.tensor) continue;
    const pteron_tensor* t = v.u.tensor;
    if (t->dynamism != PTERON_SHAPE_STATIC) g->flags[i] |= PTERON_GRAPH_DYNAMIC;
    // Constant: data that lies in none of the method's own blocks (the
    // program's or a data file's bytes).
    bool own = !t->data;
    for (const AlignedBlock& b : m->planned) own = own || inside(t->data, b);
    for (const AlignedBlock& b : m->owned) own = own || inside(t->data, b);
    if (!own) g->flags[i] |= PTERON_GRAPH_CONSTANT;
  }
  for (int32_t idx : m->inputs) g->flags[size_t(idx)] |= PTERON_GRAPH_INPUT;
  for (int32_t idx : m->outputs) g->flags[size_t(idx)] |= PTERON_GRAPH_OUTPUT;
  for (size_t c = 0; c < m->chains.size(); ++c) {
    const std::vector<Instr>& ins = m->chains[c].instrs;
    for (size_t k = 0; k < ins.size(); ++k) {
      const Instr& in = ins[k];
      std::vector<int32_t> named;
      if (in.op == Op::Kernel || in.op == Op::Delegate) {
        for (pteron_value* a : in.args) named.push_back(int32_t(a - m->values.data()));
        if (in.op == Op::Kernel && writes_int(m->op_names[size_t(in.a)]) && !named.empty()) {
          g->flags[size_t(named.back())] |= PTERON_GRAPH_COMPUTED;
          g->writers[size_t(named.back())].push_back({uint32_t(c), uint32_t(k)});
        }
        if (in.op == Op::Kernel) {  // a list's tensors count as named (a tuple return)
          std::vector<int32_t> all = named;
          for (int32_t idx : named)
            for (int32_t item : m->tlist_items[size_t(idx)])
              if (item >= 0) all.push_back(item);
          std::sort(all.begin(), all.end());
          for (size_t x = 0; x + 1 < all.size(); ++x)
            if (all[x] == all[x + 1] && (x == 0 || all[x - 1] != all[x])) {
              g->writers[size_t(all[x])].push_back({uint32_t(c), uint32_t(k)});
            }
        }
      } else if (in.op == Op::Move) {
        named = {in.a, in.b};
      } else if (in.op == Op::JumpFalse) {
        named = {in.a};
      }
      for (int32_t idx : named) {
        g->readers[size_t(idx)].push_back({uint32_t(c), uint32_t(k)});
        // A list names its items too.
        for (uint32_t item : m->int_items[size_t(idx)])
          if (item < m->values.size()) g->readers[item].push_back({uint32_t(c), uint32_t(k)});
        for (int32_t item : m->tlist_items[size_t(idx)])
          if (item >= 0) g->readers[size_t(item)].push_back({uint32_t(c), uint32_t(k)});
      }
    }
  }
}

bool rewritable(const Chain& c) {
  for (const Instr& in : c.instrs)
    if (in.op == Op::JumpFalse || in.op == Op::Move) return false;
  return true;
}

// PTERON_GRAPH_OPT: "0" turns every pass off.
bool passes_enabled() {
  const char* v = std::getenv("PTERON_GRAPH_OPT");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace

Status run_graph_passes(pteron_method* m) {
  if (!passes_enabled()) return Status::Ok();
  const std::vector<GraphPassEntry> passes = graph_passes();
  if (passes.empty()) return Status::Ok();
  pteron_graph g;
  g.m = m;
  describe(&g);
  for (size_t c = 0; c < m->chains.size(); ++c) {
    if (!rewritable(m->chains[c])) continue;
    g.chain = c;
    for (const GraphPassEntry& p : passes) {
      const int32_t rc = p.pass.run(&g);
      if (rc != PTERON_OK)
        return error(rc, "method '%s': graph pass %s (%s) failed on chain %zu", m->name.c_str(),
                     p.name.c_str(), p.library.c_str(), c);
    }
  }
  return Status::Ok();
}

}  // namespace pteron

using namespace pteron;

extern "C" {

size_t pteron_graph_size(const pteron_graph* g) {
  return g ? g->m->chains[g->chain].instrs.size() : 0;
}

const char* pteron_graph_operator(const pteron_graph* g, size_t i, const char** overload) {
  if (overload) *overload = nullptr;
  if (!g || i >= pteron_graph_size(g)) return nullptr;
  const Instr& in = g->m->chains[g->chain].instrs[i];
  if (in.op != Op::Kernel) return nullptr;
  const std::string& full = g->m->op_names[size_t(in.a)];
  // op_names holds "name.overload"; the name's namespace separator has no '.'.
  const size_t dot = full.rfind('.');
  const size_t ns = full.rfind("::");
  auto* mg = const_cast<pteron_graph*>(g);
  if (dot == std::string::npos || (ns != std::string::npos && dot < ns)) {
    mg->scratch = full;
    mg->overload.clear();
  } else {
    mg->scratch = full.substr(0, dot);
    mg->overload = full.substr(dot + 1);
  }
  if (overload) *overload = mg->overload.c_str();
  return mg->scratch.c_str();
}

size_t pteron_graph_num_args(const pteron_graph* g, size_t i) {
  if (!g || i >= pteron_graph_size(g)) return 0;
  return g->m->chains[g->chain].instrs[i].args.size();
}

pteron_value* pteron_graph_arg(const pteron_graph* g, size_t i, size_t j) {
  if (!g || i >= pteron_graph_size(g)) return nullptr;
  const Instr& in = g->m->chains[g->chain].instrs[i];
  return j < in.args.size() ? in.args[j] : nullptr;
}

pteron_value* pteron_graph_list_item(const pteron_graph* g, const pteron_value* list, size_t j) {
  if (!g || !list || list < g->m->values.data() ||
      list >= g->m->values.data() + g->m->values.size())
    return nullptr;
  const std::vector<int32_t>& items = g->m->tlist_items[size_t(list - g->m->values.data())];
  if (j >= items.size() || items[j] < 0) return nullptr;
  return &g->m->values[size_t(items[j])];
}

uint32_t pteron_graph_value_flags(const pteron_graph* g, const pteron_value* v) {
  if (!g || !v || v < g->m->values.data() || v >= g->m->values.data() + g->m->values.size())
    return 0;
  const size_t idx = size_t(v - g->m->values.data());
  uint32_t f = g->flags[idx];
  for (uint32_t item : g->m->int_items[idx])
    if (item < g->flags.size()) f |= g->flags[item];
  return f;
}

size_t pteron_graph_uses_outside(const pteron_graph* g, const pteron_value* v, size_t first,
                                 size_t count) {
  if (!g || !v || v < g->m->values.data() || v >= g->m->values.data() + g->m->values.size())
    return 0;
  const size_t idx = size_t(v - g->m->values.data());
  auto outside = [&](size_t u) {
    size_t n = (g->flags[u] & PTERON_GRAPH_OUTPUT) ? 1 : 0;
    for (const auto& r : g->readers[u])
      if (r.first != g->chain || r.second < first || r.second >= first + count) ++n;
    return n;
  };
  size_t n = outside(idx);
  // A view the memory plan made (another tensor value on the same storage that no
  // kernel writes: the exporter's view_copy removal) reads v's bytes too, where v
  // is the last value on that storage written before the read.
  const pteron_tensor* t = v->tag == PTERON_VALUE_TENSOR ? v->u.tensor : nullptr;
  if (!t || !t->data || tensor_numel(*t) == 0) return n;
  const pteron_method* m = g->m;
  auto same_storage = [&](size_t u) {
    const pteron_value& o = m->values[u];
    return u != idx && o.tag == PTERON_VALUE_TENSOR && o.u.tensor && o.u.tensor->data == t->data &&
           tensor_numel(*o.u.tensor) > 0 && !(g->flags[u] & PTERON_GRAPH_CONSTANT);
  };
  for (size_t u = 0; u < m->values.size(); ++u) {
    if (g->written(u) || !same_storage(u)) continue;
    if (g->flags[u] & PTERON_GRAPH_OUTPUT) ++n;
    for (const auto& r : g->readers[u]) {
      // Inside the run, or before it (chains run once, in order, and a rewritable chain has
      // no jumps): what the run writes cannot be what such a read sees.
      if (r.first < g->chain || (r.first == g->chain && r.second < first + count)) continue;
      if (r.first != g->chain) {  // a later chain: assume so
        ++n;
        continue;
      }
      // The last write to the storage before the read, by v or another value.
      uint32_t last_v = 0, last_other = 0;
      bool any_v = false, any_other = false;
      for (const auto& w : g->writers[idx])
        if (w.first == r.first && w.second < r.second && (!any_v || w.second > last_v))
          last_v = w.second, any_v = true;
      for (size_t o = 0; o < m->values.size(); ++o)
        if (g->written(o) && same_storage(o))
          for (const auto& w : g->writers[o])
            if (w.first == r.first && w.second < r.second && (!any_other || w.second > last_other))
              last_other = w.second, any_other = true;
      if (any_v && (!any_other || last_v >= last_other)) ++n;
    }
  }
  return n;
}

int32_t pteron_graph_replace(pteron_graph* g, size_t first, size_t count, const char* name,
                             pteron_region_fn run, void* state, void (*destroy)(void*)) {
  auto fail = [&]() {
    if (destroy) destroy(state);
    return PTERON_ERROR_INVALID_ARGUMENT;
  };
  if (!g || !run || count == 0 || first + count > pteron_graph_size(g) || first + count < first)
    return fail();
  pteron_method* m = g->m;
  std::vector<Instr>& ins = m->chains[g->chain].instrs;
  // Overlap with an earlier region of this chain, or an instruction that is
  // neither a kernel call nor a free.
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].region < 0) continue;
    const size_t e = k + m->regions[size_t(ins[k].region)].count;
    if (k < first + count && first < e) return fail();
  }
  for (size_t k = first; k < first + count; ++k)
    if (ins[k].op != Op::Kernel && ins[k].op != Op::Free) return fail();
  if (ins[first].op != Op::Kernel) return fail();
  Region r;
  r.name = name ? name : "region";
  r.run = run;
  r.state = state;
  r.destroy = destroy;
  r.count = count;
  m->regions.push_back(std::move(r));
  ins[first].region = int32_t(m->regions.size() - 1);
  return PTERON_OK;
}

}  // extern "C"
