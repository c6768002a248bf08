// method.cpp - method load (values, memory placement, operator and delegate
// resolution) and the executor (chains of instructions).
//
// Load resolves everything before the first execute: a method that cannot
// run fails at load, naming every missing operator / delegate at once.
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

#include "internal.h"

using namespace pteron;

namespace {

// 64-byte aligned heap block.
struct AlignedBlock {
  void* raw = nullptr;
  void* data = nullptr;
  size_t size = 0;
  AlignedBlock() = default;
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  AlignedBlock(AlignedBlock&& o) noexcept : raw(o.raw), data(o.data), size(o.size) {
    o.raw = o.data = nullptr;
    o.size = 0;
  }
  ~AlignedBlock() { std::free(raw); }
  bool alloc(size_t n) {
    raw = std::calloc(1, n + 64);
    if (!raw) return false;
    uintptr_t p = (reinterpret_cast<uintptr_t>(raw) + 63) & ~static_cast<uintptr_t>(63);
    data = reinterpret_cast<void*>(p);
    size = n;
    return true;
  }
};

enum class Op : uint8_t { Kernel, Delegate, Move, JumpFalse, Free };

struct Instr {
  Op op;
  int32_t a = 0, b = 0;  // Move: from,to; JumpFalse: cond,dest; Free: value; Kernel: op index; Delegate: delegate index
  pteron_kernel_fn fn = nullptr;
  std::vector<pteron_value*> args;
  std::vector<int32_t> int_list_args;  // value indices of IntList args to refresh
};

struct Chain {
  std::vector<Instr> instrs;
};

struct Delegate {
  BackendEntry backend;
  void* handle = nullptr;
};

}  // namespace

struct pteron_method {
  pteron_program* program = nullptr;
  const fb::ExecutionPlan* plan = nullptr;
  std::string name;
  bool outputs_ready = false;                 // the last execute succeeded
  std::vector<pteron_value> values;
  std::vector<pteron_tensor> tensors;        // one per value (only Tensor slots used)
  std::vector<std::vector<int64_t>> ints;    // IntList materialisation, per value
  std::vector<std::vector<uint32_t>> int_items;  // IntList item value indices, per value
  std::vector<std::vector<pteron_tensor*>> tlists;  // (Optional)TensorList, per value
  std::vector<AlignedBlock> planned;         // runtime-owned planned buffers
  std::vector<AlignedBlock> owned;           // runtime-owned unplanned tensors
  std::vector<Chain> chains;
  std::vector<Delegate> delegates;
  std::vector<int32_t> inputs, outputs;
  std::vector<bool> input_set;
  // Row-major copies of tensor inputs. Planned memory of an input may be
  // reused by later intermediates, so execute() copies these into place
  // every time: inputs keep their values between executions.
  std::vector<std::vector<unsigned char>> staged;
  pteron_kernel_context ctx;
  std::vector<std::string> op_names;  // per operator index, "name.overload"

  ~pteron_method() {
    for (Delegate& d : delegates)
      if (d.handle && d.backend.iface.destroy) d.backend.iface.destroy(d.handle);
    pteron_program_release(program);
  }
};

namespace {

void compute_strides(pteron_tensor* t) {
  int64_t s = 1;
  for (int32_t k = t->dim - 1; k >= 0; --k) {
    int d = t->dim_order[k];
    t->strides[d] = s;
    s *= t->sizes[d] > 0 ? t->sizes[d] : 1;
  }
}

int64_t tensor_numel(const pteron_tensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.dim; ++i) n *= t.sizes[i];
  return n;
}

Status check_value_index(const pteron_method* m, int64_t idx, const char* what) {
  if (idx < 0 || static_cast<size_t>(idx) >= m->values.size())
    return error(PTERON_ERROR_INVALID_PROGRAM, "%s refers to value %lld, but the method has %zu values",
                 what, (long long)idx, m->values.size());
  return Status::Ok();
}

// Bool storage must hold 0 or 1 (kernels read it as C++ bool). A program's
// constants or a caller's input may hold other bytes: normalise them. The
// program's bytes are a private copy-on-write mapping or our own copy.
void normalize_bools(void* data, size_t n) {
  unsigned char* b = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i)
    if (b[i] > 1) b[i] = 1;
}

// Builds tensor value `i`: shape, dim order, data placement.
Status build_tensor(pteron_method* m, size_t i, const fb::Tensor* ft,
                    const std::vector<AlignedBlock*>& buffers,
                    const std::vector<size_t>& buffer_sizes) {
  pteron_tensor& t = m->tensors[i];
  std::memset(&t, 0, sizeof t);
  t.dtype = static_cast<int32_t>(ft->scalar_type());
  size_t esize = element_size(t.dtype);
  if (esize == 0)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: unknown scalar type %d", i, t.dtype);
  const auto* sizes = ft->sizes();
  uint32_t dim = sizes ? sizes->size() : 0;
  if (dim > PTERON_MAX_DIM)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: rank %u exceeds the maximum of %d", i,
                 dim, PTERON_MAX_DIM);
  t.dim = static_cast<int32_t>(dim);
  int64_t numel = 1;
  int64_t span = 1;  // product with 0-sized dims counted as 1, as strides are
  for (uint32_t d = 0; d < dim; ++d) {
    int32_t s = sizes->Get(d);
    if (s < 0 || !checked_mul(numel, s, &numel) || !checked_mul(span, s > 0 ? s : 1, &span))
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: invalid size %d at dim %u", i, s, d);
    t.sizes[d] = s;
    t.bound[d] = s;
  }
  const auto* order = ft->dim_order();
  if (order && order->size() > 0) {
    if (order->size() != dim)
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: dim order has %u entries for rank %u",
                   i, order->size(), dim);
    bool seen[PTERON_MAX_DIM] = {false};
    for (uint32_t d = 0; d < dim; ++d) {
      uint8_t o = order->Get(d);
      if (o >= dim || seen[o])
        return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: dim order is not a permutation", i);
      seen[o] = true;
      t.dim_order[d] = o;
    }
  } else {
    for (uint32_t d = 0; d < dim; ++d) t.dim_order[d] = static_cast<uint8_t>(d);
  }
  compute_strides(&t);
  t.dynamism = static_cast<int32_t>(ft->shape_dynamism());
  if (t.dynamism < 0 || t.dynamism > 2)
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: invalid shape dynamism %d", i, t.dynamism);
  int64_t nbytes = 0;
  if (!checked_mul(numel, static_cast<int64_t>(esize), &nbytes))
    return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu: tensor byte size overflows", i);
  t.capacity_bytes = nbytes;

  if (ft->extra_tensor_info() &&
      ft->extra_tensor_info()->location() == fb::TensorDataLocation::EXTERNAL) {
    const auto* fqn = ft->extra_tensor_info()->fully_qualified_name();
    return error(PTERON_ERROR_NOT_SUPPORTED,
                 "value %zu: tensor '%s' keeps its data in an external data file, which pteron "
                 "does not load",
                 i, fqn ? fqn->c_str() : "?");
  }
  const fb::AllocationDetails* alloc = ft->allocation_info();
  if (ft->data_buffer_idx() > 0 && !alloc) {
    const uint8_t* p;
    Status s = m->program->constant(ft->data_buffer_idx(), static_cast<size_t>(nbytes), &p);
    if (!s.ok()) return error(s.code, "value %zu: %s", i, s.message.c_str());
    // The program's bytes are a private copy-on-write mapping or our own
    // copy, so a kernel that writes here cannot corrupt the file.
    t.data = const_cast<uint8_t*>(p);
    t.dynamism = PTERON_SHAPE_STATIC;
    // Kernels read elements in place: the data must be aligned to them.
    if (reinterpret_cast<uintptr_t>(t.data) % esize != 0)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "value %zu: constant data (buffer %u) is not aligned to its %zu-byte elements",
                   i, ft->data_buffer_idx(), esize);
    if (t.dtype == PTERON_DTYPE_BOOL) normalize_bools(t.data, static_cast<size_t>(nbytes));
    return Status::Ok();
  }
  if (alloc) {
    uint32_t id = alloc->memory_id();
    uint64_t off = uint64_t(alloc->memory_offset_high()) << 32 | alloc->memory_offset_low();
    if (id == 0 || id >= buffer_sizes.size() + 1)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "value %zu: memory id %u out of range (%zu planned buffers)", i, id,
                   buffer_sizes.size());
    size_t bsize = buffer_sizes[id - 1];
    if (off > bsize || static_cast<uint64_t>(nbytes) > bsize - off)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "value %zu: %lld bytes at offset %llu lie outside planned buffer %u (%zu bytes)",
                   i, (long long)nbytes, (unsigned long long)off, id, bsize);
    t.data = static_cast<uint8_t*>(buffers[id - 1]->data) + off;
    if (reinterpret_cast<uintptr_t>(t.data) % esize != 0)
      return error(PTERON_ERROR_INVALID_PROGRAM,
                   "value %zu: offset %llu in planned buffer %u is not aligned to its %zu-byte "
                   "elements",
                   i, (unsigned long long)off, id, esize);
    return Status::Ok();
  }
  // Neither constant nor planned: the runtime owns storage of the bound size.
  if (nbytes > 0) {
    AlignedBlock b;
    if (!b.alloc(static_cast<size_t>(nbytes)))
      return error(PTERON_ERROR_OUT_OF_MEMORY, "value %zu: cannot allocate %lld bytes", i,
                   (long long)nbytes);
    t.data = b.data;
    m->owned.push_back(std::move(b));
  }
  return Status::Ok();
}

Status build_values(pteron_method* m, const pteron_method_options* opts) {
  const fb::ExecutionPlan* plan = m->plan;
  const auto* vals = plan->values();
  size_t n = vals ? vals->size() : 0;
  m->values.assign(n, pteron_value{});
  m->tensors.assign(n, pteron_tensor{});
  m->ints.assign(n, {});
  m->int_items.assign(n, {});
  m->tlists.assign(n, {});

  // Planned buffers.
  const auto* bs = plan->non_const_buffer_sizes();
  size_t nb = (bs && bs->size() > 0) ? bs->size() - 1 : 0;
  std::vector<size_t> sizes(nb);
  std::vector<AlignedBlock*> blocks(nb);
  static AlignedBlock empty;
  if (opts && opts->num_planned_buffers) {
    if (opts->num_planned_buffers != nb || !opts->planned_buffers)
      return error(PTERON_ERROR_INVALID_ARGUMENT,
                   "method '%s' has %zu planned buffers, the caller supplied %zu", m->name.c_str(),
                   nb, opts->num_planned_buffers);
  }
  m->planned.resize(nb);
  for (size_t k = 0; k < nb; ++k) {
    int64_t s = bs->Get(static_cast<uint32_t>(k + 1));
    if (s < 0)
      return error(PTERON_ERROR_INVALID_PROGRAM, "planned buffer %zu has negative size %lld",
                   k + 1, (long long)s);
    sizes[k] = static_cast<size_t>(s);
    if (opts && opts->num_planned_buffers) {
      const pteron_buffer& ub = opts->planned_buffers[k];
      if (!ub.data || ub.size < sizes[k])
        return error(PTERON_ERROR_INVALID_ARGUMENT,
                     "supplied planned buffer %zu holds %zu bytes, the method needs %zu", k,
                     ub.size, sizes[k]);
      m->planned[k].data = ub.data;  // not owned (raw stays NULL)
      m->planned[k].size = ub.size;
    } else if (!m->planned[k].alloc(sizes[k] ? sizes[k] : 1)) {
      return error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate planned buffer %zu (%zu bytes)",
                   k + 1, sizes[k]);
    }
    blocks[k] = &m->planned[k];
  }

  // Pass 1: scalars and tensors.
  for (size_t i = 0; i < n; ++i) {
    const fb::EValue* ev = vals->Get(static_cast<uint32_t>(i));
    pteron_value& v = m->values[i];
    v.tag = PTERON_VALUE_NONE;
    if (!ev) continue;
    // The flatbuffers verifier accepts a union type whose payload is absent.
    if (ev->val_type() != fb::KernelTypes::NONE && ev->val_type() != fb::KernelTypes::Null &&
        !ev->val())
      return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu has type %d but no payload", i,
                   static_cast<int>(ev->val_type()));
    switch (ev->val_type()) {
      case fb::KernelTypes::NONE:
      case fb::KernelTypes::Null: v.tag = PTERON_VALUE_NONE; break;
      case fb::KernelTypes::Int:
        v.tag = PTERON_VALUE_INT;
        v.u.i = ev->val_as_Int()->int_val();
        break;
      case fb::KernelTypes::Bool:
        v.tag = PTERON_VALUE_BOOL;
        v.u.b = ev->val_as_Bool()->bool_val() ? 1 : 0;
        break;
      case fb::KernelTypes::Double:
        v.tag = PTERON_VALUE_DOUBLE;
        v.u.d = ev->val_as_Double()->double_val();
        break;
      case fb::KernelTypes::String: {
        v.tag = PTERON_VALUE_STRING;
        const auto* s = ev->val_as_String()->string_val();
        v.u.string.data = s ? s->c_str() : "";
        v.u.string.size = s ? s->size() : 0;
        break;
      }
      case fb::KernelTypes::Tensor: {
        Status s = build_tensor(m, i, ev->val_as_Tensor(), blocks, sizes);
        if (!s.ok()) return s;
        v.tag = PTERON_VALUE_TENSOR;
        v.u.tensor = &m->tensors[i];
        break;
      }
      case fb::KernelTypes::DoubleList: {
        v.tag = PTERON_VALUE_DOUBLE_LIST;
        const auto* items = ev->val_as_DoubleList()->items();
        v.u.double_list.data = items ? items->data() : nullptr;
        v.u.double_list.size = items ? items->size() : 0;
        break;
      }
      case fb::KernelTypes::BoolList: {
        v.tag = PTERON_VALUE_BOOL_LIST;
        const auto* items = ev->val_as_BoolList()->items();
        v.u.bool_list.data = items ? reinterpret_cast<const uint8_t*>(items->data()) : nullptr;
        v.u.bool_list.size = items ? items->size() : 0;
        break;
      }
      case fb::KernelTypes::IntList:
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList:
        break;  // pass 2
      default:
        return error(PTERON_ERROR_INVALID_PROGRAM, "value %zu has unknown type %d", i,
                     static_cast<int>(ev->val_type()));
    }
  }
  // Pass 2: lists, which refer to other values.
  for (size_t i = 0; i < n; ++i) {
    const fb::EValue* ev = vals->Get(static_cast<uint32_t>(i));
    if (!ev) continue;
    pteron_value& v = m->values[i];
    switch (ev->val_type()) {
      case fb::KernelTypes::IntList: {
        const auto* items = ev->val_as_IntList()->items();
        size_t k = items ? items->size() : 0;
        m->ints[i].assign(k, 0);
        m->int_items[i].assign(k, 0);
        for (size_t j = 0; j < k; ++j) {
          int64_t idx = items->Get(static_cast<uint32_t>(j));
          Status s = check_value_index(m, idx, format("int list value %zu", i).c_str());
          if (!s.ok()) return s;
          if (m->values[idx].tag != PTERON_VALUE_INT)
            return error(PTERON_ERROR_INVALID_PROGRAM,
                         "int list value %zu item %zu refers to value %lld, which is not an Int",
                         i, j, (long long)idx);
          m->ints[i][j] = m->values[idx].u.i;
          m->int_items[i][j] = static_cast<uint32_t>(idx);
        }
        v.tag = PTERON_VALUE_INT_LIST;
        v.u.int_list.data = m->ints[i].data();
        v.u.int_list.size = k;
        break;
      }
      case fb::KernelTypes::TensorList:
      case fb::KernelTypes::OptionalTensorList: {
        bool optional = ev->val_type() == fb::KernelTypes::OptionalTensorList;
        const auto* items = optional ? ev->val_as_OptionalTensorList()->items()
                                     : ev->val_as_TensorList()->items();
        size_t k = items ? items->size() : 0;
        m->tlists[i].assign(k, nullptr);
        for (size_t j = 0; j < k; ++j) {
          int32_t idx = items->Get(static_cast<uint32_t>(j));
          if (optional && idx == -1) continue;
          Status s = check_value_index(m, idx, format("tensor list value %zu", i).c_str());
          if (!s.ok()) return s;
          const pteron_value& item = m->values[idx];
          if (item.tag == PTERON_VALUE_TENSOR) {
            m->tlists[i][j] = item.u.tensor;
          } else if (!(optional && item.tag == PTERON_VALUE_NONE)) {
            return error(PTERON_ERROR_INVALID_PROGRAM,
                         "tensor list value %zu item %zu refers to value %d, which is not a Tensor",
                         i, j, idx);
          }
        }
        v.tag = optional ? PTERON_VALUE_OPTIONAL_TENSOR_LIST : PTERON_VALUE_TENSOR_LIST;
        v.u.tensor_list.data = m->tlists[i].data();
        v.u.tensor_list.size = k;
        break;
      }
      default: break;
    }
  }
  return Status::Ok();
}

std::string dtype_key_of(const std::vector<pteron_value*>& args) {
  for (const pteron_value* a : args)
    if (a->tag == PTERON_VALUE_TENSOR) return format("dtype=%d", a->u.tensor->dtype);
  return "";
}

Status build_chains(pteron_method* m) {
  const fb::ExecutionPlan* plan = m->plan;
  const auto* ops = plan->operators();
  size_t nops = ops ? ops->size() : 0;
  m->op_names.resize(nops);
  for (size_t k = 0; k < nops; ++k) {
    const fb::Operator* o = ops->Get(static_cast<uint32_t>(k));
    std::string nm = (o && o->name()) ? o->name()->str() : "";
    std::string ov = (o && o->overload()) ? o->overload()->str() : "";
    m->op_names[k] = ov.empty() ? nm : nm + "." + ov;
  }
  const auto* dels = plan->delegates();
  size_t ndel = dels ? dels->size() : 0;

  std::vector<std::string> missing_ops, missing_dels;
  std::set<std::string> missing_seen;
  const auto* chains = plan->chains();
  size_t nchains = chains ? chains->size() : 0;
  m->chains.resize(nchains);
  for (size_t c = 0; c < nchains; ++c) {
    const fb::Chain* ch = chains->Get(static_cast<uint32_t>(c));
    const auto* ins = ch ? ch->instructions() : nullptr;
    size_t ni = ins ? ins->size() : 0;
    m->chains[c].instrs.resize(ni);
    for (size_t k = 0; k < ni; ++k) {
      const fb::Instruction* fi = ins->Get(static_cast<uint32_t>(k));
      Instr& in = m->chains[c].instrs[k];
      std::string where = format("chain %zu instruction %zu", c, k);
      if (fi && fi->instr_args_type() != fb::InstructionArguments::NONE && !fi->instr_args())
        return error(PTERON_ERROR_INVALID_PROGRAM, "%s has type %d but no arguments",
                     where.c_str(), static_cast<int>(fi->instr_args_type()));
      auto take_args = [&](const flatbuffers::Vector<int32_t>* args) -> Status {
        size_t na = args ? args->size() : 0;
        in.args.resize(na);
        for (size_t j = 0; j < na; ++j) {
          int32_t idx = args->Get(static_cast<uint32_t>(j));
          Status s = check_value_index(m, idx, (where + format(" argument %zu", j)).c_str());
          if (!s.ok()) return s;
          in.args[j] = &m->values[idx];
          if (m->values[idx].tag == PTERON_VALUE_INT_LIST) in.int_list_args.push_back(idx);
        }
        return Status::Ok();
      };
      switch (fi ? fi->instr_args_type() : fb::InstructionArguments::NONE) {
        case fb::InstructionArguments::KernelCall: {
          const fb::KernelCall* kc = fi->instr_args_as_KernelCall();
          in.op = Op::Kernel;
          in.a = kc->op_index();
          if (in.a < 0 || static_cast<size_t>(in.a) >= nops)
            return error(PTERON_ERROR_INVALID_PROGRAM, "%s: operator index %d out of range (%zu operators)",
                         where.c_str(), in.a, nops);
          Status s = take_args(kc->args());
          if (!s.ok()) return s;
          const fb::Operator* o = ops->Get(static_cast<uint32_t>(in.a));
          std::string nm = (o && o->name()) ? o->name()->str() : "";
          std::string ov = (o && o->overload()) ? o->overload()->str() : "";
          in.fn = find_kernel(nm, ov, dtype_key_of(in.args));
          if (!in.fn && missing_seen.insert(m->op_names[in.a]).second)
            missing_ops.push_back(m->op_names[in.a]);
          break;
        }
        case fb::InstructionArguments::DelegateCall: {
          const fb::DelegateCall* dc = fi->instr_args_as_DelegateCall();
          in.op = Op::Delegate;
          in.a = dc->delegate_index();
          if (in.a < 0 || static_cast<size_t>(in.a) >= ndel)
            return error(PTERON_ERROR_INVALID_PROGRAM, "%s: delegate index %d out of range (%zu delegates)",
                         where.c_str(), in.a, ndel);
          Status s = take_args(dc->args());
          if (!s.ok()) return s;
          break;
        }
        case fb::InstructionArguments::MoveCall: {
          const fb::MoveCall* mc = fi->instr_args_as_MoveCall();
          in.op = Op::Move;
          in.a = mc->move_from();
          in.b = mc->move_to();
          Status s = check_value_index(m, in.a, where.c_str());
          if (s.ok()) s = check_value_index(m, in.b, where.c_str());
          if (!s.ok()) return s;
          if (m->values[in.a].tag != m->values[in.b].tag)
            return error(PTERON_ERROR_INVALID_PROGRAM, "%s: move between values of different types",
                         where.c_str());
          break;
        }
        case fb::InstructionArguments::JumpFalseCall: {
          const fb::JumpFalseCall* jc = fi->instr_args_as_JumpFalseCall();
          in.op = Op::JumpFalse;
          in.a = jc->cond_value_index();
          in.b = jc->destination_instruction();
          Status s = check_value_index(m, in.a, where.c_str());
          if (!s.ok()) return s;
          if (m->values[in.a].tag != PTERON_VALUE_BOOL && m->values[in.a].tag != PTERON_VALUE_TENSOR)
            return error(PTERON_ERROR_INVALID_PROGRAM, "%s: jump condition value %d is not a Bool",
                         where.c_str(), in.a);
          if (in.b < 0 || static_cast<size_t>(in.b) >= ni)
            return error(PTERON_ERROR_INVALID_PROGRAM, "%s: jump destination %d out of range (%zu instructions)",
                         where.c_str(), in.b, ni);
          break;
        }
        case fb::InstructionArguments::FreeCall: {
          in.op = Op::Free;
          in.a = fi->instr_args_as_FreeCall()->value_index();
          Status s = check_value_index(m, in.a, where.c_str());
          if (!s.ok()) return s;
          break;
        }
        default:
          return error(PTERON_ERROR_INVALID_PROGRAM, "%s has an unknown instruction type", where.c_str());
      }
    }
  }
  // Delegates: every backend must be registered.
  m->delegates.resize(ndel);
  for (size_t k = 0; k < ndel; ++k) {
    const fb::BackendDelegate* d = dels->Get(static_cast<uint32_t>(k));
    std::string id = (d && d->id()) ? d->id()->str() : "";
    if (!find_backend(id, &m->delegates[k].backend)) {
      if (missing_seen.insert("delegate:" + id).second) missing_dels.push_back(id);
    }
  }
  if (!missing_ops.empty()) {
    std::string list;
    for (const std::string& s : missing_ops) list += (list.empty() ? "" : ", ") + printable(s);
    std::string extra;
    if (!missing_dels.empty()) {
      extra = "; missing delegate(s): ";
      for (size_t i = 0; i < missing_dels.size(); ++i)
        extra += (i ? ", " : "") + printable(missing_dels[i]);
    }
    return error(PTERON_ERROR_MISSING_OPERATOR,
                 "method '%s' needs %zu operator(s) that no loaded kernel library provides: %s%s",
                 printable(m->name).c_str(), missing_ops.size(), list.c_str(), extra.c_str());
  }
  if (!missing_dels.empty()) {
    std::string list;
    for (const std::string& s : missing_dels) list += (list.empty() ? "" : ", ") + printable(s);
    return error(PTERON_ERROR_MISSING_DELEGATE,
                 "method '%s' needs delegate backend(s) that are not registered: %s",
                 printable(m->name).c_str(), list.c_str());
  }
  // Initialise delegates.
  for (size_t k = 0; k < ndel; ++k) {
    const fb::BackendDelegate* d = dels->Get(static_cast<uint32_t>(k));
    Delegate& del = m->delegates[k];
    const fb::BackendDelegateDataReference* ref = d->processed();
    if (!ref)
      return error(PTERON_ERROR_INVALID_PROGRAM, "delegate %zu (%s) has no processed data", k,
                   del.backend.id.c_str());
    const uint8_t* blob = nullptr;
    size_t blob_size = 0;
    if (ref->location() == fb::DataLocation::INLINE) {
      const auto* inl = m->program->root->backend_delegate_data();
      if (!inl || ref->index() >= inl->size() || !inl->Get(ref->index())->data())
        return error(PTERON_ERROR_INVALID_PROGRAM, "delegate %zu (%s): inline data index %u out of range",
                     k, del.backend.id.c_str(), ref->index());
      blob = inl->Get(ref->index())->data()->data();
      blob_size = inl->Get(ref->index())->data()->size();
    } else if (ref->location() == fb::DataLocation::SEGMENT) {
      Status s = m->program->segment(ref->index(), &blob, &blob_size);
      if (!s.ok()) return error(s.code, "delegate %zu (%s): %s", k, del.backend.id.c_str(), s.message.c_str());
    } else {
      return error(PTERON_ERROR_INVALID_PROGRAM, "delegate %zu (%s): unknown data location", k,
                   del.backend.id.c_str());
    }
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
    if (del.backend.iface.is_available && !del.backend.iface.is_available())
      return error(PTERON_ERROR_MISSING_DELEGATE, "delegate backend '%s' is registered but not available on this machine",
                   del.backend.id.c_str());
    m->ctx.code = PTERON_OK;
    m->ctx.message.clear();
    m->ctx.program = m->program;
    int32_t rc = del.backend.iface.init(&m->ctx, blob, blob_size, specs.data(), specs.size(), &del.handle);
    m->ctx.program = nullptr;
    if (rc != PTERON_OK)
      return error(rc, "delegate %zu (%s) failed to initialise: %s", k, del.backend.id.c_str(),
                   m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
  }
  return Status::Ok();
}

Status load_method(pteron_program* p, const char* name, const pteron_method_options* opts,
                   pteron_method* m) {
  m->plan = p->plan(name);
  if (!m->plan) {
    std::string names;
    for (size_t i = 0; i < pteron_program_method_count(p); ++i) {
      const char* nm = "";
      pteron_status_release(pteron_program_method_name(p, i, &nm));
      names += (i ? ", " : "") + printable(nm);
    }
    return error(PTERON_ERROR_NOT_FOUND, "program has no method '%s' (it has: %s)",
                 name ? printable(name).c_str() : "(null)", names.c_str());
  }
  m->name = name;
  if (opts && opts->struct_size < sizeof(uint32_t) * 2)
    return error(PTERON_ERROR_INVALID_ARGUMENT, "method options struct_size %u is too small", opts->struct_size);
  Status s = build_values(m, opts);
  if (!s.ok()) return s;
  auto take_io = [&](const flatbuffers::Vector<int32_t>* v, std::vector<int32_t>* out,
                     const char* what) -> Status {
    size_t k = v ? v->size() : 0;
    for (size_t j = 0; j < k; ++j) {
      int32_t idx = v->Get(static_cast<uint32_t>(j));
      Status st = check_value_index(m, idx, format("%s %zu", what, j).c_str());
      if (!st.ok()) return st;
      out->push_back(idx);
    }
    return Status::Ok();
  };
  s = take_io(m->plan->inputs(), &m->inputs, "input");
  if (!s.ok()) return s;
  s = take_io(m->plan->outputs(), &m->outputs, "output");
  if (!s.ok()) return s;
  m->input_set.assign(m->inputs.size(), false);
  m->staged.assign(m->inputs.size(), {});
  for (size_t j = 0; j < m->inputs.size(); ++j)
    if (m->values[m->inputs[j]].tag != PTERON_VALUE_TENSOR) m->input_set[j] = true;
  return build_chains(m);
}

// Upper bound on instructions executed per execute(), so that a corrupt jump
// loop ends with an error instead of hanging.
size_t step_budget(const pteron_method* m) {
  size_t n = 0;
  for (const Chain& c : m->chains) n += c.instrs.size();
  return 16 * n + 1024;
}

// Copies row-major `src` into tensor `t`'s storage, honouring its dim order.
void place_input(pteron_tensor* t, const std::vector<unsigned char>& src) {
  const size_t es = element_size(t->dtype);
  const int64_t numel = tensor_numel(*t);
  if (src.empty() || numel == 0) return;
  bool contiguous = true;
  for (int32_t d = 0; d < t->dim; ++d) contiguous = contiguous && t->dim_order[d] == d;
  if (contiguous || numel == 1) {
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

Status execute(pteron_method* m) {
  for (size_t j = 0; j < m->inputs.size(); ++j) {
    if (!m->input_set[j])
      return error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu of method '%s' was not set", j,
                   m->name.c_str());
    pteron_value& v = m->values[m->inputs[j]];
    if (v.tag == PTERON_VALUE_TENSOR) place_input(v.u.tensor, m->staged[j]);
  }
  size_t budget = step_budget(m);
  size_t steps = 0;
  for (size_t c = 0; c < m->chains.size(); ++c) {
    std::vector<Instr>& ins = m->chains[c].instrs;
    size_t pc = 0;
    while (pc < ins.size()) {
      if (++steps > budget)
        return error(PTERON_ERROR_INVALID_PROGRAM,
                     "method '%s' exceeded %zu executed instructions: the program loops", m->name.c_str(),
                     budget);
      Instr& in = ins[pc];
      switch (in.op) {
        case Op::Kernel: {
          for (int32_t idx : in.int_list_args) {
            // Int lists hold value indices: refresh from the (possibly
            // updated) Int values.
            const std::vector<uint32_t>& items = m->int_items[idx];
            std::vector<int64_t>& dst = m->ints[idx];
            for (size_t j = 0; j < dst.size(); ++j) {
              const pteron_value& iv = m->values[items[j]];
              dst[j] = iv.tag == PTERON_VALUE_INT ? iv.u.i : dst[j];
            }
          }
          m->ctx.code = PTERON_OK;
          m->ctx.message.clear();
          int32_t rc = in.fn(&m->ctx, in.args.data(), in.args.size());
          if (rc != PTERON_OK)
            return error(rc, "instruction %zu (%s) failed: %s", pc, printable(m->op_names[in.a]).c_str(),
                         m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
          ++pc;
          break;
        }
        case Op::Delegate: {
          Delegate& d = m->delegates[in.a];
          m->ctx.code = PTERON_OK;
          m->ctx.message.clear();
          int32_t rc = d.backend.iface.execute(&m->ctx, d.handle, in.args.data(), in.args.size());
          if (rc != PTERON_OK)
            return error(rc, "instruction %zu (delegate %s) failed: %s", pc, d.backend.id.c_str(),
                         m->ctx.message.empty() ? pteron_error_name(rc) : m->ctx.message.c_str());
          ++pc;
          break;
        }
        case Op::Move:
          m->values[in.b] = m->values[in.a];
          ++pc;
          break;
        case Op::JumpFalse: {
          const pteron_value& v = m->values[in.a];
          bool cond;
          if (v.tag == PTERON_VALUE_BOOL) {
            cond = v.u.b != 0;
          } else {
            const pteron_tensor* t = v.u.tensor;
            if (t->dtype != PTERON_DTYPE_BOOL || tensor_numel(*t) != 1 || !t->data)
              return error(PTERON_ERROR_INVALID_PROGRAM,
                           "instruction %zu: jump condition is not a single bool", pc);
            cond = *static_cast<const uint8_t*>(t->data) != 0;
          }
          pc = cond ? pc + 1 : static_cast<size_t>(in.b);
          break;
        }
        case Op::Free:
          ++pc;  // storage is planned or owned for the method's lifetime
          break;
      }
    }
  }
  return Status::Ok();
}

void fill_info(const pteron_value& v, pteron_value_info* info) {
  std::memset(info, 0, sizeof *info);
  info->tag = v.tag;
  switch (v.tag) {
    case PTERON_VALUE_TENSOR: {
      const pteron_tensor* t = v.u.tensor;
      info->dtype = t->dtype;
      info->dim = t->dim;
      info->dynamism = t->dynamism;
      for (int32_t d = 0; d < t->dim; ++d) {
        info->sizes[d] = t->sizes[d];
        info->bound[d] = t->bound[d];
        info->dim_order[d] = t->dim_order[d];
      }
      info->data = t->data;
      info->nbytes = static_cast<size_t>(tensor_numel(*t)) * element_size(t->dtype);
      break;
    }
    case PTERON_VALUE_INT: info->scalar = static_cast<double>(v.u.i); break;
    case PTERON_VALUE_DOUBLE: info->scalar = v.u.d; break;
    case PTERON_VALUE_BOOL: info->scalar = static_cast<double>(v.u.b); break;
    default: break;
  }
}

}  // namespace

extern "C" {

int32_t pteron_named_data_get(pteron_kernel_context* ctx, const char* key, const void** data,
                              size_t* size) {
  if (!ctx || !key || !data || !size) return PTERON_ERROR_INVALID_ARGUMENT;
  if (!ctx->program) return PTERON_ERROR_NOT_FOUND;  // only inside a delegate's init
  const uint8_t* p = nullptr;
  size_t n = 0;
  Status s = ctx->program->named_data(key, &p, &n);
  if (!s.ok()) return s.code;
  *data = p;
  *size = n;
  return PTERON_OK;
}

pteron_status* pteron_method_load(pteron_program* p, const char* name,
                                  const pteron_method_options* options, pteron_method** out) {
  if (!p || !out) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "program or out is NULL"));
  *out = nullptr;
  auto* m = new (std::nothrow) pteron_method;
  if (!m) return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "cannot allocate a method"));
  p->refs.fetch_add(1);
  m->program = p;
  Status s;
  try {
    s = load_method(p, name, options, m);
  } catch (const std::bad_alloc&) {
    s = error(PTERON_ERROR_OUT_OF_MEMORY, "out of memory while loading method '%s'", name ? name : "");
  } catch (...) {
    s = error(PTERON_ERROR_INTERNAL, "unexpected failure while loading method '%s'", name ? name : "");
  }
  if (!s.ok()) {
    delete m;
    return to_c(s);
  }
  *out = m;
  return nullptr;
}

void pteron_method_release(pteron_method* m) { delete m; }

size_t pteron_method_input_count(const pteron_method* m) { return m ? m->inputs.size() : 0; }
size_t pteron_method_output_count(const pteron_method* m) { return m ? m->outputs.size() : 0; }

pteron_status* pteron_method_input_info(const pteron_method* m, size_t index, pteron_value_info* info) {
  if (!m || !info) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or info is NULL"));
  if (index >= m->inputs.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "input index %zu out of range (method '%s' has %zu inputs)",
                      index, m->name.c_str(), m->inputs.size()));
  fill_info(m->values[m->inputs[index]], info);
  return nullptr;
}

pteron_status* pteron_method_output_info(const pteron_method* m, size_t index, pteron_value_info* info) {
  if (!m || !info) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method or info is NULL"));
  if (index >= m->outputs.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "output index %zu out of range (method '%s' has %zu outputs)",
                      index, m->name.c_str(), m->outputs.size()));
  fill_info(m->values[m->outputs[index]], info);
  return nullptr;
}

pteron_status* pteron_method_set_input(pteron_method* m, size_t index, int32_t dtype,
                                       const int64_t* sizes, int32_t dim, const void* data,
                                       size_t nbytes) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  if (index >= m->inputs.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "input index %zu out of range (method '%s' has %zu inputs)",
                      index, m->name.c_str(), m->inputs.size()));
  pteron_value& v = m->values[m->inputs[index]];
  if (v.tag != PTERON_VALUE_TENSOR)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu is not a tensor; use pteron_method_set_input_scalar",
                      index));
  pteron_tensor* t = v.u.tensor;
  if (dtype != t->dtype)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu: expected dtype %s, got %s", index,
                      dtype_name(t->dtype), dtype_name(dtype)));
  if (dim != t->dim || (dim > 0 && !sizes))
    return to_c(error(PTERON_ERROR_SHAPE_MISMATCH, "input %zu: expected rank %d, got rank %d", index,
                      t->dim, dim));
  int64_t numel = 1;
  for (int32_t d = 0; d < dim; ++d) {
    if (sizes[d] < 0)
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH, "input %zu: negative size %lld at dim %d", index,
                        (long long)sizes[d], d));
    if (t->dynamism == PTERON_SHAPE_STATIC && sizes[d] != t->bound[d])
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH,
                        "input %zu: dim %d has size %lld, the method's static shape needs %lld", index, d,
                        (long long)sizes[d], (long long)t->bound[d]));
    if (sizes[d] > t->bound[d])
      return to_c(error(PTERON_ERROR_SHAPE_MISMATCH,
                        "input %zu: dim %d has size %lld, beyond its upper bound %lld", index, d,
                        (long long)sizes[d], (long long)t->bound[d]));
    numel *= sizes[d];
  }
  size_t need = static_cast<size_t>(numel) * element_size(t->dtype);
  if (nbytes != need || (need && !data))
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu: %zu bytes given, shape and dtype need %zu",
                      index, nbytes, need));
  if (static_cast<int64_t>(need) > t->capacity_bytes || (need && !t->data))
    return to_c(error(PTERON_ERROR_SHAPE_MISMATCH, "input %zu: %zu bytes exceed its storage (%lld bytes)",
                      index, need, (long long)t->capacity_bytes));
  for (int32_t d = 0; d < dim; ++d) t->sizes[d] = sizes[d];
  compute_strides(t);
  try {
    m->staged[index].assign(static_cast<const unsigned char*>(data),
                            static_cast<const unsigned char*>(data) + need);
  } catch (...) {
    return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "input %zu: cannot copy %zu bytes", index, need));
  }
  m->input_set[index] = true;
  return nullptr;
}

pteron_status* pteron_method_set_input_scalar(pteron_method* m, size_t index, double value) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  if (index >= m->inputs.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "input index %zu out of range (method '%s' has %zu inputs)",
                      index, m->name.c_str(), m->inputs.size()));
  pteron_value& v = m->values[m->inputs[index]];
  // The exporter specialises a method on the value of a scalar input (it is
  // baked into the program), so only that value is accepted.
  double expected;
  switch (v.tag) {
    case PTERON_VALUE_INT: expected = static_cast<double>(v.u.i); break;
    case PTERON_VALUE_DOUBLE: expected = v.u.d; break;
    case PTERON_VALUE_BOOL: expected = v.u.b ? 1.0 : 0.0; break;
    default:
      return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "input %zu is not an Int, Double or Bool", index));
  }
  if (!(value == expected))
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "input %zu: the method was exported for the value %.17g, got %.17g", index,
                      expected, value));
  m->input_set[index] = true;
  return nullptr;
}

pteron_status* pteron_method_execute(pteron_method* m) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  m->outputs_ready = false;  // a failed execute leaves outputs half-written
  try {
    Status st = execute(m);
    m->outputs_ready = st.ok();
    return to_c(std::move(st));
  } catch (const std::bad_alloc&) {
    return to_c(error(PTERON_ERROR_OUT_OF_MEMORY, "out of memory during execute"));
  } catch (...) {
    return to_c(error(PTERON_ERROR_INTERNAL, "unexpected failure during execute"));
  }
}

pteron_status* pteron_method_copy_output(const pteron_method* m, size_t index, void* dst,
                                         size_t capacity) {
  if (!m) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "method is NULL"));
  if (index >= m->outputs.size())
    return to_c(error(PTERON_ERROR_NOT_FOUND, "output index %zu out of range (method '%s' has %zu outputs)",
                      index, m->name.c_str(), m->outputs.size()));
  const pteron_value& v = m->values[m->outputs[index]];
  if (v.tag != PTERON_VALUE_TENSOR)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu is not a tensor", index));
  if (!m->outputs_ready)
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT,
                      "output %zu of method '%s' has no value: the method has not executed "
                      "successfully (no pteron_method_execute yet, or the last one failed)",
                      index, m->name.c_str()));
  const pteron_tensor* t = v.u.tensor;
  int64_t numel = tensor_numel(*t);
  size_t es = element_size(t->dtype);
  size_t need = static_cast<size_t>(numel) * es;
  if (capacity < need || (need && !dst))
    return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu needs %zu bytes, capacity is %zu", index,
                      need, capacity));
  if (need == 0) return nullptr;
  if (!t->data) return to_c(error(PTERON_ERROR_INVALID_ARGUMENT, "output %zu has no data", index));
  bool contiguous = true;
  for (int32_t d = 0; d < t->dim; ++d) contiguous = contiguous && t->dim_order[d] == d;
  if (contiguous) {
    std::memcpy(dst, t->data, need);
    return nullptr;
  }
  int64_t idx[PTERON_MAX_DIM] = {0};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t off = 0;
    for (int32_t d = 0; d < t->dim; ++d) off += idx[d] * t->strides[d];
    std::memcpy(static_cast<char*>(dst) + n * es, static_cast<const char*>(t->data) + off * es, es);
    for (int32_t d = t->dim - 1; d >= 0; --d) {
      if (++idx[d] < t->sizes[d]) break;
      idx[d] = 0;
    }
  }
  return nullptr;
}

}  // extern "C"
