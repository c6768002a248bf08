// SPDX-License-Identifier: BSD-3-Clause
// resolve.cpp - the second half of method load: every instruction of every
// chain is decoded and checked, every kernel call is resolved in the kernel
// registry (name, overload, kernel key), every delegate in the backend
// registry, and the delegates are initialised with their processed data.
//
// Everything missing is named at once: a method whose operators or
// delegates are not all registered fails here, listing all of them.
#include <cstring>
#include <set>

#include "method.h"

namespace pteron {
namespace {

// Operators and delegates of the plan that no library provides, in the
// order they were first needed, each once.
struct Missing {
  std::vector<std::string> ops, delegates;
  std::set<std::string> seen;
  void op(const std::string& name) {
    if (seen.insert(name).second) ops.push_back(name);
  }
  void delegate(const std::string& id) {
    if (seen.insert("delegate:" + id).second) delegates.push_back(id);
  }
};

std::string operator_field(const flatbuffers::String* s) { return s ? s->str() : ""; }

// "name.overload" (or "name") of every operator, for messages.
void name_operators(pteron_method* m) {
  const auto* ops = m->plan->operators();
  size_t nops = ops ? ops->size() : 0;
  m->op_names.resize(nops);
  for (size_t k = 0; k < nops; ++k) {
    const fb::Operator* o = ops->Get(static_cast<uint32_t>(k));
    std::string nm = o ? operator_field(o->name()) : "";
    std::string ov = o ? operator_field(o->overload()) : "";
    m->op_names[k] = ov.empty() ? nm : nm + "." + ov;
  }
}

// The key of a kernel call: that of its first tensor argument's dtype
// (pteron_kernel_key_for_dtype, registry.cpp); "" when no argument is a
// tensor. The one place the runtime builds a call's key (see kernel.h).
std::string kernel_key(const std::vector<pteron_value*>& args) {
  for (const pteron_value* a : args)
    if (a->tag == PTERON_VALUE_TENSOR) {
      const char* key = pteron_kernel_key_for_dtype(a->u.tensor->dtype);
      return key ? key : "";
    }
  return "";
}

// ---- decoding ---------------------------------------------------------------

// One instruction being decoded: its place in the program, for messages.
struct Decoding {
  pteron_method* m;
  Instr* in;
  std::string where;  // "chain C instruction K"
  size_t chain_length;
};

// The instruction's arguments as pointers to the method's values.
Status take_args(Decoding& d, const flatbuffers::Vector<int32_t>* args) {
  size_t na = args ? args->size() : 0;
  d.in->args.resize(na);
  for (size_t j = 0; j < na; ++j) {
    int32_t idx = args->Get(static_cast<uint32_t>(j));
    Status s = check_value_index(d.m, idx, (d.where + format(" argument %zu", j)).c_str());
    if (!s.ok()) return s;
    d.in->args[j] = &d.m->values[idx];
    if (d.m->values[idx].tag == PTERON_VALUE_INT_LIST) d.in->int_list_args.push_back(idx);
  }
  return Status::Ok();
}

// A kernel call, resolved in the kernel registry now; a missing operator is
// noted (load fails after every instruction has been decoded).
Status decode_kernel_call(Decoding& d, const fb::KernelCall* kc, Missing* missing) {
  const auto* ops = d.m->plan->operators();
  size_t nops = ops ? ops->size() : 0;
  Instr& in = *d.in;
  in.op = Op::Kernel;
  in.a = kc->op_index();
  if (in.a < 0 || static_cast<size_t>(in.a) >= nops)
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s: operator index %d out of range (%zu operators)",
                 d.where.c_str(), in.a, nops);
  Status s = take_args(d, kc->args());
  if (!s.ok()) return s;
  const fb::Operator* o = ops->Get(static_cast<uint32_t>(in.a));
  std::string nm = o ? operator_field(o->name()) : "";
  std::string ov = o ? operator_field(o->overload()) : "";
  in.fn = find_kernel(nm, ov, kernel_key(in.args));
  if (!in.fn) missing->op(d.m->op_names[in.a]);
  return Status::Ok();
}

Status decode_delegate_call(Decoding& d, const fb::DelegateCall* dc) {
  const auto* dels = d.m->plan->delegates();
  size_t ndel = dels ? dels->size() : 0;
  d.in->op = Op::Delegate;
  d.in->a = dc->delegate_index();
  if (d.in->a < 0 || static_cast<size_t>(d.in->a) >= ndel)
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s: delegate index %d out of range (%zu delegates)",
                 d.where.c_str(), d.in->a, ndel);
  return take_args(d, dc->args());
}

Status decode_move(Decoding& d, const fb::MoveCall* mc) {
  Instr& in = *d.in;
  in.op = Op::Move;
  in.a = mc->move_from();
  in.b = mc->move_to();
  Status s = check_value_index(d.m, in.a, d.where.c_str());
  if (s.ok()) s = check_value_index(d.m, in.b, d.where.c_str());
  if (!s.ok()) return s;
  if (d.m->values[in.a].tag != d.m->values[in.b].tag)
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s: move between values of different types",
                 d.where.c_str());
  return Status::Ok();
}

Status decode_jump_false(Decoding& d, const fb::JumpFalseCall* jc) {
  Instr& in = *d.in;
  in.op = Op::JumpFalse;
  in.a = jc->cond_value_index();
  in.b = jc->destination_instruction();
  Status s = check_value_index(d.m, in.a, d.where.c_str());
  if (!s.ok()) return s;
  // A Bool, a one-element bool tensor, or an Int placeholder that a prim operator turns into
  // a Bool before the jump reads it (a torch.cond on a size: executorch_prim::gt.Scalar of a
  // sym_size writes its SymBool into a value the exporter declares Int; prim_ops.cpp). The
  // executor checks the value's type when the jump runs.
  int32_t tag = d.m->values[in.a].tag;
  if (tag != PTERON_VALUE_BOOL && tag != PTERON_VALUE_TENSOR && tag != PTERON_VALUE_INT)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "%s: jump condition value %d is not a Bool, a bool tensor or an Int placeholder",
                 d.where.c_str(), in.a);
  // A destination equal to the chain's length ends the chain: upstream's emitter ends a
  // torch.cond's first branch with a jump there (exir/emit/_emitter.py, the jump over the
  // false branch when it is the chain's last).
  if (in.b < 0 || static_cast<size_t>(in.b) > d.chain_length)
    return error(PTERON_ERROR_INVALID_PROGRAM,
                 "%s: jump destination %d out of range (%zu instructions)", d.where.c_str(), in.b,
                 d.chain_length);
  return Status::Ok();
}

Status decode_free(Decoding& d, const fb::FreeCall* fc) {
  d.in->op = Op::Free;
  d.in->a = fc->value_index();
  return check_value_index(d.m, d.in->a, d.where.c_str());
}

Status decode_instruction(Decoding& d, const fb::Instruction* fi, Missing* missing) {
  if (fi && fi->instr_args_type() != fb::InstructionArguments::NONE && !fi->instr_args())
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s has type %d but no arguments", d.where.c_str(),
                 static_cast<int>(fi->instr_args_type()));
  switch (fi ? fi->instr_args_type() : fb::InstructionArguments::NONE) {
    case fb::InstructionArguments::KernelCall:
      return decode_kernel_call(d, fi->instr_args_as_KernelCall(), missing);
    case fb::InstructionArguments::DelegateCall:
      return decode_delegate_call(d, fi->instr_args_as_DelegateCall());
    case fb::InstructionArguments::MoveCall: return decode_move(d, fi->instr_args_as_MoveCall());
    case fb::InstructionArguments::JumpFalseCall:
      return decode_jump_false(d, fi->instr_args_as_JumpFalseCall());
    case fb::InstructionArguments::FreeCall: return decode_free(d, fi->instr_args_as_FreeCall());
    default:
      return error(PTERON_ERROR_INVALID_PROGRAM, "%s has an unknown instruction type",
                   d.where.c_str());
  }
}

Status decode_chains(pteron_method* m, Missing* missing) {
  const auto* chains = m->plan->chains();
  size_t nchains = chains ? chains->size() : 0;
  m->chains.resize(nchains);
  for (size_t c = 0; c < nchains; ++c) {
    const fb::Chain* ch = chains->Get(static_cast<uint32_t>(c));
    const auto* ins = ch ? ch->instructions() : nullptr;
    size_t ni = ins ? ins->size() : 0;
    m->chains[c].instrs.resize(ni);
    for (size_t k = 0; k < ni; ++k) {
      Decoding d{m, &m->chains[c].instrs[k], format("chain %zu instruction %zu", c, k), ni};
      Status s = decode_instruction(d, ins->Get(static_cast<uint32_t>(k)), missing);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

// ---- delegates --------------------------------------------------------------

// Every delegate's backend, from the backend registry.
void resolve_delegates(pteron_method* m, Missing* missing) {
  const auto* dels = m->plan->delegates();
  size_t ndel = dels ? dels->size() : 0;
  m->delegates.resize(ndel);
  for (size_t k = 0; k < ndel; ++k) {
    const fb::BackendDelegate* d = dels->Get(static_cast<uint32_t>(k));
    std::string id = (d && d->id()) ? d->id()->str() : "";
    if (!find_backend(id, &m->delegates[k].backend)) missing->delegate(id);
  }
}

// Each name quoted, so an empty or blank one is still seen: 'a', 'b'.
std::string printable_list(const std::vector<std::string>& items) {
  std::string list;
  for (const std::string& s : items) list += (list.empty() ? "'" : ", '") + printable(s) + "'";
  return list;
}

// Why a missing operator or delegate can never be provided here, where pteron
// knows: upstream's device copies (et_copy::_h2d_copy.out, _d2h_copy.out) and
// upstream's CudaBackend belong to upstream's CUDA path (AOTInductor-compiled
// blobs), which pteron does not run; pteron's own CUDA delegate is
// PteronCudaBackend (component backend_cuda), made by pteron's partitioner.
constexpr const char* kPteronCudaHint =
    "export the program again with pteron.lowering.cuda.CudaPartitioner (delegate "
    "PteronCudaBackend, component backend_cuda), or export it for the CPU";

std::string never_provided(const Missing& missing) {
  std::string why;
  for (const std::string& op : missing.ops)
    if (op.rfind("et_copy::", 0) == 0) {
      why = "; et_copy::* operators are upstream's host <-> device copies of a program lowered "
            "for upstream's device backends, which pteron does not run: ";
      why += kPteronCudaHint;
      break;
    }
  for (const std::string& id : missing.delegates) {
    if (id == "CudaBackend")
      why += std::string("; CudaBackend is upstream's CUDA delegate (AOTInductor-compiled "
                         "blobs), which pteron does not run: ") + kPteronCudaHint;
    else if (id == "PteronCudaBackend")
      why += "; PteronCudaBackend is pteron's CUDA delegate: link pteron::backend_cuda (Conan "
             "option with_cuda=True, CMake -DPTERON_WITH_CUDA=ON)";
  }
  return why;
}

// MISSING_OPERATOR (naming the missing delegates too) or MISSING_DELEGATE.
Status report_missing(const pteron_method* m, const Missing& missing) {
  if (!missing.ops.empty()) {
    std::string extra = never_provided(missing);
    if (!missing.delegates.empty())
      extra += "; missing delegate(s): " + printable_list(missing.delegates);
    return error(PTERON_ERROR_MISSING_OPERATOR,
                 "method '%s' needs %zu operator(s) that no loaded kernel library provides: %s%s",
                 printable(m->name).c_str(), missing.ops.size(),
                 printable_list(missing.ops).c_str(), extra.c_str());
  }
  if (!missing.delegates.empty())
    return error(PTERON_ERROR_MISSING_DELEGATE,
                 "method '%s' needs delegate backend(s) that are not registered: %s%s",
                 printable(m->name).c_str(), printable_list(missing.delegates).c_str(),
                 never_provided(missing).c_str());
  return Status::Ok();
}

// The processed data of delegate `k`: inline in the program or a segment.
Status delegate_blob(const pteron_method* m, size_t k, const fb::BackendDelegate* d,
                     const uint8_t** blob, size_t* blob_size) {
  const char* id = m->delegates[k].backend.id.c_str();
  const fb::BackendDelegateDataReference* ref = d->processed();
  if (!ref)
    return error(PTERON_ERROR_INVALID_PROGRAM, "delegate %zu (%s) has no processed data", k, id);
  if (ref->location() == fb::DataLocation::INLINE) {
    const auto* inl = m->program->root->backend_delegate_data();
    if (!inl || ref->index() >= inl->size() || !inl->Get(ref->index())->data())
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "delegate %zu (%s): inline data index %u out of range", k, id, ref->index());
    *blob = inl->Get(ref->index())->data()->data();
    *blob_size = inl->Get(ref->index())->data()->size();
    return Status::Ok();
  }
  if (ref->location() == fb::DataLocation::SEGMENT) {
    Status s = m->program->segment(ref->index(), blob, blob_size);
    if (!s.ok()) return error(s.code, "delegate %zu (%s): %s", k, id, s.message.c_str());
    return Status::Ok();
  }
  return error(PTERON_ERROR_INVALID_PROGRAM, "delegate %zu (%s): unknown data location", k, id);
}

std::vector<pteron_compile_spec> compile_specs(const fb::BackendDelegate* d) {
  std::vector<pteron_compile_spec> specs;
  if (d->compile_specs()) {
    for (uint32_t j = 0; j < d->compile_specs()->size(); ++j) {
      const fb::CompileSpec* cs = d->compile_specs()->Get(j);
      pteron_compile_spec spec{};
      spec.key = (cs && cs->key()) ? cs->key()->c_str() : "";
      spec.value = (cs && cs->value()) ? cs->value()->data() : nullptr;
      spec.value_size = (cs && cs->value()) ? cs->value()->size() : 0;
      specs.push_back(spec);
    }
  }
  return specs;
}

// Hands each delegate its processed data and compile specs (backend `init`).
// Named data (pteron_named_data_get) is reachable only during this call.
Status init_delegates(pteron_method* m) {
  const auto* dels = m->plan->delegates();
  for (size_t k = 0; k < m->delegates.size(); ++k) {
    const fb::BackendDelegate* d = dels->Get(static_cast<uint32_t>(k));
    Delegate& del = m->delegates[k];
    const uint8_t* blob = nullptr;
    size_t blob_size = 0;
    Status s = delegate_blob(m, k, d, &blob, &blob_size);
    if (!s.ok()) return s;
    // A backend reads its blob in place (a flatbuffer of 8-byte fields):
    // it gets it 16-byte aligned, as the format places it (inline data is
    // force_align 16, segments are aligned by the exporter). A program whose
    // offsets say otherwise has its blob copied for the call.
    AlignedBlock aligned;
    if (reinterpret_cast<uintptr_t>(blob) % 16 != 0) {
      if (!aligned.alloc(blob_size))
        return error(PTERON_ERROR_OUT_OF_MEMORY, "delegate %zu (%s): cannot copy its %zu bytes",
                     k, del.backend.id.c_str(), blob_size);
      std::memcpy(aligned.data, blob, blob_size);
      blob = static_cast<const uint8_t*>(aligned.data);
    }
    std::vector<pteron_compile_spec> specs = compile_specs(d);
    if (del.backend.iface.is_available && !del.backend.iface.is_available())
      return error(PTERON_ERROR_MISSING_DELEGATE,
                   "delegate backend '%s' is registered but not available on this machine",
                   del.backend.id.c_str());
    m->ctx.code = PTERON_OK;
    m->ctx.message.clear();
    m->ctx.program = m->program;
    int32_t rc =
        del.backend.iface.init(&m->ctx, blob, blob_size, specs.data(), specs.size(), &del.handle);
    m->ctx.program = nullptr;
    if (rc != PTERON_OK)
      return error(rc, "delegate %zu (%s) failed to initialise: %s", k, del.backend.id.c_str(),
                   m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
  }
  return Status::Ok();
}

}  // namespace

Status build_chains(pteron_method* m) {
  name_operators(m);
  Missing missing;
  Status s = decode_chains(m, &missing);
  if (!s.ok()) return s;
  resolve_delegates(m, &missing);
  s = report_missing(m, missing);
  if (!s.ok()) return s;
  s = init_delegates(m);
  if (!s.ok()) return s;
  return run_graph_passes(m);
}

}  // namespace pteron

extern "C" int32_t pteron_named_data_get(pteron_kernel_context* ctx, const char* key,
                                         const void** data, size_t* size) {
  if (!ctx || !key || !data || !size) return PTERON_ERROR_INVALID_ARGUMENT;
  const uint8_t* p = nullptr;
  size_t n = 0;
  if (ctx->program) {
    pteron::Status s = ctx->program->named_data(key, &p, &n);
    if (!s.ok()) return s.code;
    *data = p;
    *size = n;
    return PTERON_OK;
  }
  // Outside a delegate's init there is no program: NOT_FOUND, unless a test
  // gave the context programs to read (pteron_testing_backend_init).
  for (const pteron_program* prog : ctx->named_data_programs) {
    pteron::Status s = prog->named_data(key, &p, &n);
    if (s.code == PTERON_ERROR_NOT_FOUND) continue;
    if (!s.ok()) return s.code;
    *data = p;
    *size = n;
    return PTERON_OK;
  }
  return PTERON_ERROR_NOT_FOUND;
}
