// SPDX-License-Identifier: BSD-3-Clause
// executor.cpp - runs a loaded method: the staged inputs are copied into
// their tensors, then each chain's instructions run in order. A kernel call
// calls the kernel resolved at load (resolve.cpp), a delegate call the
// backend's execute; moves, jumps and frees act on the method's values.
//
// Nothing is looked up here: every operator and delegate was resolved at
// method load.
#include <cstring>

#include "method.h"

namespace pteron {
namespace {

// Upper bound on instructions executed per execute(), so that a corrupt jump
// loop ends with an error instead of hanging.
size_t step_budget(const pteron_method* m) {
  size_t n = 0;
  for (const Chain& c : m->chains) n += c.instrs.size();
  return 16 * n + 1024;
}

// An input of at least kParallelCopyBytes is copied over pteron_parallel_for
// in pieces of at least kCopyGrainBytes: the copy is part of every execute
// (the staged input must survive the execution, see method.h), and one core
// alone copies about half as fast as two (a 1 MB input took about 80 us on
// a 2-core VM, about 1 % of a 2-thread MLP execution).
constexpr size_t kParallelCopyBytes = 256 * 1024;
constexpr size_t kCopyGrainBytes = 64 * 1024;

struct CopyJob {
  unsigned char* dst;
  const unsigned char* src;
};

void copy_range(void* user, int64_t begin, int64_t end) {
  const CopyJob& j = *static_cast<const CopyJob*>(user);
  std::memcpy(j.dst + begin, j.src + begin, size_t(end - begin));
}

// Copies row-major `src` into tensor `t`'s storage, honouring its dim order.
void place_input(pteron_tensor* t, const std::vector<unsigned char>& src) {
  const size_t es = element_size(t->dtype);
  const int64_t numel = tensor_numel(*t);
  if (src.empty() || numel == 0) return;
  bool contiguous = true;
  for (int32_t d = 0; d < t->dim; ++d) contiguous = contiguous && t->dim_order[d] == d;
  if (contiguous || numel == 1) {
    if (src.size() >= kParallelCopyBytes && t->dtype != PTERON_DTYPE_BOOL) {
      CopyJob job{static_cast<unsigned char*>(t->data), src.data()};
      pteron_parallel_for(0, int64_t(src.size()), int64_t(kCopyGrainBytes), &copy_range, &job);
      return;
    }
    std::memcpy(t->data, src.data(), src.size());
    if (t->dtype == PTERON_DTYPE_BOOL) normalize_bools(t->data, src.size());
    return;
  }
  int64_t idx[PTERON_MAX_DIM] = {0};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (int32_t d = 0; d < t->dim; ++d) off += idx[d] * t->strides[d];
    std::memcpy(static_cast<char*>(t->data) + off * es, src.data() + n * es, es);
    if (t->dtype == PTERON_DTYPE_BOOL) normalize_bools(static_cast<char*>(t->data) + off, 1);
    for (int32_t d = t->dim - 1; d >= 0; --d) {
      if (++idx[d] < t->sizes[d]) break;
      idx[d] = 0;
    }
  }
}

Status place_inputs(pteron_method* m) {
  for (size_t j = 0; j < m->inputs.size(); ++j) {
    if (!m->input_set[j])
      return error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu of method '%s' was not set", j,
                   m->name.c_str());
    pteron_value& v = m->values[m->inputs[j]];
    if (v.tag == PTERON_VALUE_TENSOR) place_input(v.u.tensor, m->staged[j]);
  }
  return Status::Ok();
}

// Int lists hold value indices: refresh them from the (possibly updated) Int
// values before the kernel reads them.
void refresh_int_lists(pteron_method* m, const Instr& in) {
  for (int32_t idx : in.int_list_args) {
    const std::vector<uint32_t>& items = m->int_items[idx];
    std::vector<int64_t>& dst = m->ints[idx];
    for (size_t j = 0; j < dst.size(); ++j) {
      const pteron_value& iv = m->values[items[j]];
      dst[j] = iv.tag == PTERON_VALUE_INT ? iv.u.i : dst[j];
    }
  }
}

// The interned event name of operator `op` ("native_call_" and the operator
// without its namespace, as upstream's runtime names its kernel events).
int32_t native_call_name(pteron_method* m, int32_t op) {
  if (m->native_call_names.size() != m->op_names.size())
    m->native_call_names.assign(m->op_names.size(), -1);
  int32_t& id = m->native_call_names[size_t(op)];
  if (id < 0) {
    const std::string& full = m->op_names[size_t(op)];
    const size_t ns = full.rfind("::");
    id = m->profile.intern(("native_call_" + full.substr(ns == std::string::npos ? 0 : ns + 2))
                               .c_str());
  }
  return id;
}

Status run_kernel(pteron_method* m, const Instr& in, size_t pc) {
  refresh_int_lists(m, in);
  m->ctx.code = PTERON_OK;
  m->ctx.message.clear();
  int32_t rc;
  if (m->ctx.profile) {
    Profile& p = m->profile;
    const uint64_t t0 = profile_clock_ns();
    rc = in.fn(&m->ctx, in.args.data(), in.args.size());
    p.add(native_call_name(m, in.a), p.chain, p.instruction, t0, profile_clock_ns());
  } else {
    rc = in.fn(&m->ctx, in.args.data(), in.args.size());
  }
  if (rc != PTERON_OK)
    return error(rc, "instruction %zu (%s) failed: %s", pc, printable(m->op_names[in.a]).c_str(),
                 m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
  return Status::Ok();
}

// A graph pass's region (graph.cpp) in place of instructions pc .. pc +
// count - 1. *ran is false when it declined: then the instructions run.
Status run_region(pteron_method* m, const Instr& in, size_t pc, bool* ran) {
  Region& r = m->regions[size_t(in.region)];
  m->ctx.code = PTERON_OK;
  m->ctx.message.clear();
  const bool timed = m->ctx.profile != nullptr;
  const uint64_t t0 = timed ? profile_clock_ns() : 0;
  const int32_t rc = r.run(&m->ctx, r.state);
  *ran = rc != PTERON_REGION_DECLINED;
  if (!*ran) return Status::Ok();
  if (timed) {
    Profile& p = m->profile;
    if (r.event < 0) r.event = p.intern(("native_call_" + r.name).c_str());
    p.add(r.event, p.chain, p.instruction, t0, profile_clock_ns());
  }
  if (rc != PTERON_OK)
    return error(rc, "instructions %zu-%zu (%s, from %s) failed: %s", pc, pc + r.count - 1,
                 r.name.c_str(), printable(m->op_names[in.a]).c_str(),
                 m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
  return Status::Ok();
}

Status run_delegate(pteron_method* m, const Instr& in, size_t pc) {
  Delegate& d = m->delegates[in.a];
  m->ctx.code = PTERON_OK;
  m->ctx.message.clear();
  int32_t rc = d.backend.iface.execute(&m->ctx, d.handle, in.args.data(), in.args.size());
  if (rc != PTERON_OK)
    return error(rc, "instruction %zu (delegate %s) failed: %s", pc, d.backend.id.c_str(),
                 m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
  return Status::Ok();
}

// The condition of a jump: a Bool value, or a one-element bool tensor.
Status jump_condition(const pteron_method* m, const Instr& in, size_t pc, bool* cond) {
  const pteron_value& v = m->values[in.a];
  if (v.tag == PTERON_VALUE_BOOL) {
    *cond = v.u.b != 0;
    return Status::Ok();
  }
  if (v.tag != PTERON_VALUE_TENSOR)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "instruction %zu: jump condition value %d is a %s, not a Bool (no operator "
                 "wrote a Bool into it before the jump)",
                 pc, in.a, pteron_value_tag_name(v.tag));
  const pteron_tensor* t = v.u.tensor;
  if (t->dtype != PTERON_DTYPE_BOOL || tensor_numel(*t) != 1 || !t->data)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "instruction %zu: jump condition is not a single bool", pc);
  *cond = *static_cast<const uint8_t*>(t->data) != 0;
  return Status::Ok();
}

Status step(pteron_method* m, const Instr& in, size_t* pc);

// step(), timed: "OPERATOR_CALL" or "DELEGATE_CALL" with the instruction's
// chain and index; a delegate's own events fall between (kernel.h).
Status step_profiled(pteron_method* m, const Instr& in, size_t chain, size_t* pc) {
  Profile& p = m->profile;
  if (in.op != Op::Kernel && in.op != Op::Delegate) return step(m, in, pc);
  p.chain = int32_t(chain);
  p.instruction = int32_t(*pc);
  const int32_t name = p.intern(in.op == Op::Kernel ? "OPERATOR_CALL" : "DELEGATE_CALL");
  const int32_t instruction = p.instruction;
  const uint64_t t0 = profile_clock_ns();
  Status s = step(m, in, pc);
  p.add(name, int32_t(chain), instruction, t0, profile_clock_ns());
  p.chain = p.instruction = -1;
  return s;
}

// Runs instruction `*pc` and moves *pc to the next one to run.
Status step(pteron_method* m, const Instr& in, size_t* pc) {
  Status s;
  switch (in.op) {
    case Op::Kernel:
      if (in.region >= 0) {
        bool ran = false;
        s = run_region(m, in, *pc, &ran);
        if (ran) {
          if (s.ok()) *pc += m->regions[size_t(in.region)].count;
          return s;
        }
      }
      s = run_kernel(m, in, *pc);
      break;
    case Op::Delegate: s = run_delegate(m, in, *pc); break;
    case Op::Move: m->values[in.b] = m->values[in.a]; break;
    case Op::JumpFalse: {
      bool cond = false;
      s = jump_condition(m, in, *pc, &cond);
      if (!s.ok()) return s;
      *pc = cond ? *pc + 1 : static_cast<size_t>(in.b);
      return s;
    }
    case Op::Free: break;  // storage is planned or owned for the method's lifetime
  }
  if (s.ok()) ++*pc;
  return s;
}

Status execute_chains(pteron_method* m) {
  pteron_parallel_wake();  // idle workers wake while the inputs are copied
  Status s = place_inputs(m);
  if (!s.ok()) return s;
  size_t budget = step_budget(m);
  size_t steps = 0;
  for (size_t c = 0; c < m->chains.size(); ++c) {
    const std::vector<Instr>& ins = m->chains[c].instrs;
    size_t pc = 0;
    while (pc < ins.size()) {
      if (++steps > budget)
        return error(PTERON_ERROR_INVALID_PROGRAM,
                     "method '%s' exceeded %zu executed instructions: the program loops",
                     m->name.c_str(), budget);
      s = m->ctx.profile ? step_profiled(m, ins[pc], c, &pc) : step(m, ins[pc], &pc);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

}  // namespace

Status execute(pteron_method* m) {
  if (!m->profile.on) {
    m->ctx.profile = nullptr;
    return execute_chains(m);
  }
  Profile& p = m->profile;
  m->ctx.profile = &p;
  const uint64_t t0 = profile_clock_ns();
  Status s = execute_chains(m);
  p.add(p.intern("Method::execute"), -1, 0, t0, profile_clock_ns());
  ++p.runs;
  m->ctx.profile = nullptr;
  return s;
}

}  // namespace pteron
