// SPDX-License-Identifier: BSD-3-Clause
// transpose.cpp - the load-time rewrites of transposes and reshapes (passes.h): upstream's
// exporter writes NCHW<->NHWC transposes around every channels-last region and channel shuffles
// as reshape, transpose, reshape; these passes turn the ones that move no data into reshapes
// (views) and fold the rest into as few copies as they need.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph.h"
#include "passes/passes.h"

namespace pteron {
namespace xnnpack {

// A Convert writes its input's shape. Upstream's exporter (1.5.1) declares the
// QDInt8 output of a Convert that feeds a convolution in NCHW order while the
// Convert's input is NHWC (the channels-last pass permutes the float value but
// not the dynamically quantized one); XNNPACK takes the shape from the input
// when it reshapes. The quantization of such a value is per batch element
// (non_batch_dims 3, over H, W and C together), so the order of the other three
// dims does not change its arithmetic. Returns how many declarations were set
// to the input's shape.
size_t fix_dynamic_convert_shapes(Graph& g) {
  size_t fixed = 0;
  for (const Node& n : g.nodes) {
    if (n.op != Op::Convert || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
    Value& out = g.values[n.outputs[0]];
    const Shape& in = g.values[n.inputs[0]].dims;
    if (out.quant.kind != QuantKind::Dynamic || in.size() != 4 || out.dims.size() != 4 ||
        out.quant.token_dims != 3 || out.dims == in)
      continue;
    if (out.dims == Shape{in[0], in[3], in[1], in[2]}) {
      out.dims = in;
      ++fixed;
    }
  }
  return fixed;
}

// A transpose that only moves dims of size 1 keeps the memory order: it is a
// reshape, which every XNNPACK can run (e.g. [N,1,1,C] -> [N,C,1,1]).
void rewrite_trivial_transposes(Graph& g) {
  for (Node& n : g.nodes) {
    if (n.op != Op::StaticTranspose || n.inputs.size() != 1) continue;
    const Shape& in = g.values[n.inputs[0]].dims;
    if (n.list0.size() != in.size()) continue;
    size_t last = 0;
    bool ordered = true, first = true;
    for (size_t p : n.list0) {
      if (p >= in.size()) {
        ordered = false;
        break;
      }
      if (in[p] == 1) continue;
      if (!first && p < last) {
        ordered = false;
        break;
      }
      last = p;
      first = false;
    }
    if (!ordered) continue;
    n.op = Op::StaticReshape;
    n.list0 = g.values[n.outputs[0]].dims;
  }
}
namespace {

// Does transpose(p2) . (reshapes that only add or drop dims of size 1) .
// transpose(p1), applied to a tensor of shape `a`, keep every element where
// it was? `c` is the shape the second transpose reads. Dims of size 1 never
// move memory; the others are labelled by their place in `a` and must come
// back in order.
bool round_trip_keeps_order(const Shape& a, const std::vector<size_t>& p1, const Shape& c,
                            const std::vector<size_t>& p2) {
  auto is_perm = [](const std::vector<size_t>& p, size_t rank) {
    if (p.size() != rank) return false;
    std::vector<char> seen(rank, 0);
    for (size_t x : p) {
      if (x >= rank || seen[x]) return false;
      seen[x] = 1;
    }
    return true;
  };
  if (!is_perm(p1, a.size()) || !is_perm(p2, c.size())) return false;
  std::vector<int> label_a(a.size(), -1);
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != 1) label_a[i] = m++;
  std::vector<int> seq;  // labels of the first transpose's output, size-1 dims left out
  std::vector<size_t> sizes;
  for (size_t x : p1)
    if (a[x] != 1) seq.push_back(label_a[x]), sizes.push_back(a[x]);
  std::vector<int> label_c(c.size(), -1);
  size_t j = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] == 1) continue;
    if (j >= sizes.size() || c[i] != sizes[j]) return false;  // a reshape that moves data
    label_c[i] = seq[j++];
  }
  if (j != sizes.size()) return false;
  int next = 0;
  for (size_t x : p2)
    if (c[x] != 1 && label_c[x] != next++) return false;
  return next == m;
}

}  // namespace

// NCHW<->NHWC round trips removed: a StaticTranspose reading (through
// reshapes of size-1 dims) another StaticTranspose's output, where the two
// cancel, becomes a reshape of the first one's input (a view where it can
// be one). The first transpose and the reshapes, when nothing else reads
// them, are dropped. Returns the number of transposes removed or rewritten.
size_t cancel_transpose_round_trips(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && producer[v] < 0) producer[v] = int(k);
  auto single = [](const Node& n) {
    return n.inputs.size() == 1 && n.outputs.size() == 1 && !n.has_range();
  };
  std::vector<char> candidate(g.nodes.size(), 0);
  size_t rewritten = 0;
  for (size_t k2 = 0; k2 < g.nodes.size(); ++k2) {
    Node& t2 = g.nodes[k2];
    if (t2.op != Op::StaticTranspose || !single(t2)) continue;
    uint32_t v = t2.inputs[0];
    std::vector<size_t> chain;
    while (producer[v] >= 0 && size_t(producer[v]) < k2 && chain.size() < 8) {
      const Node& r = g.nodes[size_t(producer[v])];
      if (r.op != Op::StaticReshape || !single(r)) break;
      chain.push_back(size_t(producer[v]));
      v = r.inputs[0];
    }
    if (producer[v] < 0 || size_t(producer[v]) >= k2) continue;
    const size_t k1 = size_t(producer[v]);
    const Node& t1 = g.nodes[k1];
    if (t1.op != Op::StaticTranspose || !single(t1)) continue;
    const uint32_t a = t1.inputs[0];
    if (!round_trip_keeps_order(g.values[a].dims, t1.list0, g.values[t2.inputs[0]].dims, t2.list0))
      continue;
    t2.op = Op::StaticReshape;
    t2.inputs[0] = a;
    t2.list0 = g.values[t2.outputs[0]].dims;
    candidate[k1] = 1;
    for (size_t c : chain) candidate[c] = 1;
    ++rewritten;
  }
  if (!rewritten) return 0;
  // Drop the candidates nothing reads any more (dropping a reshape may leave
  // the transpose before it unread).
  std::vector<char> drop(g.nodes.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<size_t> readers(nv, 0);
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (!drop[k])
        for (uint32_t v : g.nodes[k].inputs)
          if (v < nv) ++readers[v];
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      if (!candidate[k] || drop[k]) continue;
      const uint32_t out = g.nodes[k].outputs[0];
      if (readers[out] == 0 && !g.values[out].graph_output) drop[k] = 1, changed = true;
    }
  }
  erase_dropped(g, drop);
  return rewritten;
}

namespace {

// The data movement of a chain of transposes and reshapes, as one
// permutation: the input is cut into "atoms" (factors of its dims) so that
// every reshape of the chain only regroups whole atoms; a transpose then
// permutes atoms. Fills `atom_shape` (the atoms of size > 1 in input memory
// order) and `perm` (output position -> atom). Returns false when a reshape
// splits dims in a way atoms cannot follow or the chain is malformed.
bool compose_chain(const Graph& g, const std::vector<const Node*>& chain, Shape* atom_shape,
                   std::vector<size_t>* perm) {
  std::vector<size_t> size;  // per atom id
  using Dims = std::vector<std::vector<size_t>>;
  auto make = [&](const Shape& s) {
    Dims d(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      d[i].push_back(size.size());
      size.push_back(s[i]);
    }
    return d;
  };
  Dims in = make(g.values[chain[0]->inputs[0]].dims);
  // An empty tensor has no factorisation into atoms (a dim of 0 would divide
  // by zero below) and nothing to move: the chain is left as it is.
  for (size_t a : size)
    if (a == 0) return false;
  Dims cur = in;
  // Splits atom x into (outer, x / outer) everywhere it appears.
  auto split = [&](size_t x, size_t outer) {
    const size_t hi = size.size(), lo = hi + 1;
    size.push_back(outer);
    size.push_back(size[x] / outer);
    for (Dims* d : {&in, &cur})
      for (auto& dim : *d)
        for (size_t i = 0; i < dim.size(); ++i)
          if (dim[i] == x) {
            dim[i] = lo;
            dim.insert(dim.begin() + long(i), hi);
            break;
          }
  };
  for (const Node* n : chain) {
    if (n->op == Op::StaticTranspose) {
      if (n->list0.size() != cur.size()) return false;
      Dims next(cur.size());
      std::vector<char> seen(cur.size(), 0);
      for (size_t d = 0; d < cur.size(); ++d) {
        const size_t p = n->list0[d];
        if (p >= cur.size() || seen[p]) return false;
        seen[p] = 1;
        next[d] = cur[p];
      }
      cur = std::move(next);
      continue;
    }
    const Shape& to = g.values[n->outputs[0]].dims;
    std::vector<size_t> seq;  // atoms of size > 1, memory order
    for (auto& dim : cur)
      for (size_t a : dim)
        if (size[a] != 1) seq.push_back(a);
    Dims next(to.size());
    size_t j = 0;
    for (size_t d = 0; d < to.size(); ++d) {
      size_t have = 1;
      while (have < to[d]) {
        if (j >= seq.size()) return false;
        const size_t a = seq[j], need = to[d] / have;
        if (to[d] % have != 0) return false;
        if (size[a] > need) {
          if (size[a] % need != 0) return false;
          split(a, need);
          seq[j] = size.size() - 2;
          seq.insert(seq.begin() + long(j) + 1, size.size() - 1);
          continue;
        }
        next[d].push_back(a);
        have *= size[a];
        ++j;
      }
      if (have != to[d]) return false;
    }
    if (j != seq.size()) return false;
    cur = std::move(next);
  }
  std::vector<size_t> in_order, out_order;
  for (auto& dim : in)
    for (size_t a : dim)
      if (size[a] != 1) in_order.push_back(a);
  for (auto& dim : cur)
    for (size_t a : dim)
      if (size[a] != 1) out_order.push_back(a);
  if (in_order.size() != out_order.size()) return false;
  std::vector<size_t> pos(size.size(), size_t(-1));
  for (size_t i = 0; i < in_order.size(); ++i) pos[in_order[i]] = i;
  atom_shape->clear();
  perm->clear();
  for (size_t a : in_order) atom_shape->push_back(size[a]);
  for (size_t a : out_order) {
    if (pos[a] == size_t(-1)) return false;
    perm->push_back(pos[a]);
  }
  if (perm->size() > 6) return false;  // XNNPACK's transposes take at most 6 dims (xnnpack.h)
  // A batch dim that may vary at run time must stay one whole atom, first.
  const Shape& a0 = g.values[chain[0]->inputs[0]].dims;
  const Shape& z0 = g.values[chain.back()->outputs[0]].dims;
  if (!a0.empty() && a0[0] != 1) {
    if (in[0].size() != 1 || perm->empty() || (*perm)[0] != 0 || z0.empty() || z0[0] != a0[0])
      return false;
  }
  return true;
}

}  // namespace

// Chains of single-input transposes and reshapes, each link read only by the
// next (an NHWC->NCHW transpose, a channel shuffle written as reshape,
// transpose, reshape, and an NCHW->NHWC transpose): with two transposes or
// more, the chain becomes one reshape (a view) when its data stays in place,
// else reshape -> one transpose -> reshape (views around a single copy).
// The chain's intermediate values are reused for the new ones. Returns the
// number of transposes removed.
size_t fold_transpose_chains(Graph& g, size_t* chains) {
  const size_t nv = g.values.size(), nn = g.nodes.size();
  std::vector<int> producer(nv, -1);
  std::vector<size_t> readers(nv, 0);
  for (size_t k = 0; k < nn; ++k) {
    for (uint32_t v : g.nodes[k].outputs)
      if (v < nv && producer[v] < 0) producer[v] = int(k);
    for (uint32_t v : g.nodes[k].inputs)
      if (v < nv) ++readers[v];
  }
  auto link = [&](const Node& n) {
    return (n.op == Op::StaticTranspose || n.op == Op::StaticReshape) && n.inputs.size() == 1 &&
           n.outputs.size() == 1 && !n.has_range() && n.inputs[0] < nv && n.outputs[0] < nv;
  };
  // An inner value: written by a link, read once (by a link), not an argument.
  auto inner = [&](uint32_t v) {
    const Value& val = g.values[v];
    return readers[v] == 1 && !val.graph_output && !val.graph_input && !val.constant &&
           val.external == kNoValue && producer[v] >= 0 && link(g.nodes[size_t(producer[v])]);
  };
  std::vector<char> continued(nn, 0);  // its output feeds the next link
  for (size_t k = 0; k < nn; ++k) {
    const Node& n = g.nodes[k];
    if (link(n) && inner(n.inputs[0])) continued[size_t(producer[n.inputs[0]])] = 1;
  }
  std::vector<char> drop(nn, 0);
  size_t removed = 0;
  *chains = 0;
  for (size_t k = 0; k < nn; ++k) {
    if (!link(g.nodes[k]) || continued[k]) continue;
    std::vector<size_t> idx{k};
    while (idx.size() < 16) {
      const uint32_t v = g.nodes[idx.back()].inputs[0];
      if (!inner(v) || size_t(producer[v]) >= idx.back()) break;
      idx.push_back(size_t(producer[v]));
    }
    std::reverse(idx.begin(), idx.end());
    size_t transposes = 0;
    for (size_t i : idx) transposes += g.nodes[i].op == Op::StaticTranspose;
    if (transposes < 2) continue;
    std::vector<const Node*> chain;
    for (size_t i : idx) chain.push_back(&g.nodes[i]);
    Shape atoms;
    std::vector<size_t> perm;
    if (!compose_chain(g, chain, &atoms, &perm)) continue;
    const uint32_t a = g.nodes[idx.front()].inputs[0], z = g.nodes[idx.back()].outputs[0];
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == i;
    std::vector<uint32_t> spare;  // the chain's inner values, free to reuse
    for (size_t i = 0; i + 1 < idx.size(); ++i) spare.push_back(g.nodes[idx[i]].outputs[0]);
    std::vector<Node> made;
    auto reshape = [&](uint32_t from, uint32_t to) {
      Node r = g.nodes[idx.back()];
      r.op = Op::StaticReshape;
      r.inputs = {from};
      r.outputs = {to};
      r.list0 = g.values[to].dims;
      r.list1.clear();
      made.push_back(std::move(r));
    };
    if (identity) {
      reshape(a, z);
    } else {
      Shape os(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) os[i] = atoms[perm[i]];
      const bool need_in = atoms != g.values[a].dims, need_out = os != g.values[z].dims;
      if (spare.size() < size_t(need_in) + size_t(need_out)) continue;
      uint32_t from = a;
      size_t s = 0;
      if (need_in) {
        g.values[spare[s]].dims = atoms;
        reshape(a, spare[s]);
        from = spare[s++];
      }
      Node t = g.nodes[idx.back()];
      t.op = Op::StaticTranspose;
      t.inputs = {from};
      t.list0 = perm;
      t.list1.clear();
      if (need_out) {
        g.values[spare[s]].dims = os;
        t.outputs = {spare[s]};
        made.push_back(std::move(t));
        reshape(spare[s], z);
      } else {
        t.outputs = {z};
        made.push_back(std::move(t));
      }
    }
    // The new nodes take the places of the chain's last nodes.
    const size_t first = idx.size() - made.size();
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i < first)
        drop[idx[i]] = 1;
      else {
        const uint32_t index = g.nodes[idx[i]].index;
        g.nodes[idx[i]] = std::move(made[i - first]);
        g.nodes[idx[i]].index = index;
      }
    }
    removed += transposes - (identity ? 0 : 1);
    ++*chains;
  }
  if (!*chains) return 0;
  erase_dropped(g, drop);
  return removed;
}

// Two StaticTransposes of one value with the same permutation: the second one's readers read
// the first one's output, and the second goes (unless it is a graph output). A delegate whose
// NCHW input feeds both a concatenation and a batch norm (each of DenseNet's dense blocks) has
// one such pair, written by the exporter. Returns the number of nodes removed.
size_t merge_duplicate_transposes(Graph& g) {
  const size_t nv = g.values.size();
  std::vector<char> drop(g.nodes.size(), 0);
  std::vector<uint32_t> rename(nv);
  for (size_t v = 0; v < nv; ++v) rename[v] = uint32_t(v);
  size_t merged = 0;
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    const Node& first = g.nodes[a];
    if (first.op != Op::StaticTranspose || first.inputs.size() != 1 || first.outputs.size() != 1)
      continue;
    for (size_t b = a + 1; b < g.nodes.size(); ++b) {
      const Node& second = g.nodes[b];
      if (drop[b] || second.op != Op::StaticTranspose || second.inputs != first.inputs ||
          second.outputs.size() != 1 || second.list0 != first.list0 ||
          second.flags != first.flags || second.outputs[0] >= nv || first.outputs[0] >= nv ||
          g.values[second.outputs[0]].graph_output ||
          g.values[second.outputs[0]].dims != g.values[first.outputs[0]].dims ||
          touches_quant(g, second))
        continue;
      rename[second.outputs[0]] = first.outputs[0];
      drop[b] = 1;
      ++merged;
    }
  }
  if (!merged) return 0;
  for (Node& n : g.nodes)
    for (uint32_t& v : n.inputs)
      if (v < nv) v = rename[v];
  erase_dropped(g, drop);
  return merged;
}

}  // namespace xnnpack
}  // namespace pteron
