// SPDX-License-Identifier: BSD-3-Clause
// prim_ops.cpp - the operators upstream's exporter emits outside any kernel
// library, which the runtime itself provides (registered once, as library
// "runtime", when the runtime library loads):
//  - sizes of dynamic tensors: aten::sym_size.int, aten::sym_numel;
//  - a tensor's one element as a scalar (Tensor.item()): aten::_local_scalar_dense;
//  - scalar arithmetic and comparisons on symbolic sizes: executorch_prim::<op>.Scalar
//    (add, sub, mul, floordiv, truediv, mod, neg, eq, gt, lt, ge, le, ceil, round, trunc,
//    sym_float, sym_int, sym_max, sym_min, sym_not, sym_ite) and floordiv.int, mod.int;
//  - executorch_prim::et_view.default (a view sharing its input's storage) and
//    executorch_prim::et_copy_index.tensor (row `index` of a stacked loop output).
//
// Scalars are Int, Double or Bool values. The last argument is the result: its
// tag is rewritten to the result's type (the exporter emits Int placeholders
// for every scalar result). Arithmetic follows Python's rules, as eager
// PyTorch computes these on SymInt/SymFloat: Int op Int is Int (Bool counts
// as Int), anything with a Double is Double, truediv is always Double,
// floordiv and mod round toward negative infinity. Integer overflow, a
// division by zero and a non-finite value converted to Int are errors, as is
// an argument of the wrong type, each naming the operator and the argument.
#include <cmath>
#include <cstring>

#include "internal.h"

namespace {

using pteron::format;

int32_t fail(pteron_kernel_context* ctx, int32_t code, const std::string& msg) {
  return pteron_kernel_fail(ctx, code, msg.c_str());
}

// One call: the operator's name for messages, its arguments.
struct Call {
  pteron_kernel_context* ctx;
  const char* op;
  pteron_value* const* args;
  size_t n;

  int32_t fail(int32_t code, const std::string& msg) const {
    return ::fail(ctx, code, format("%s: %s", op, msg.c_str()));
  }
  int32_t arity(size_t want) const {
    if (n == want && args) {
      for (size_t i = 0; i < n; ++i)
        if (!args[i])
          return fail(PTERON_ERROR_INVALID_PROGRAM, format("argument %zu is absent", i));
      return PTERON_OK;
    }
    return fail(PTERON_ERROR_INVALID_PROGRAM,
                format("takes %zu arguments, the program passes %zu", want, n));
  }
  int32_t wrong_type(size_t i, const char* name, const char* want) const {
    return fail(PTERON_ERROR_INVALID_PROGRAM,
                format("argument %zu ('%s') is %s, expected %s", i, name,
                       pteron_value_tag_name(args[i]->tag), want));
  }
  // The result slot: a scalar value (never a tensor or a list, which the
  // result would overwrite).
  int32_t check_out(size_t i) const {
    int32_t t = args[i]->tag;
    if (t == PTERON_VALUE_INT || t == PTERON_VALUE_DOUBLE || t == PTERON_VALUE_BOOL ||
        t == PTERON_VALUE_NONE)
      return PTERON_OK;
    return wrong_type(i, "out", "an Int, Double or Bool result");
  }
  int32_t tensor(size_t i, const char* name, pteron_tensor** t) const {
    if (args[i]->tag != PTERON_VALUE_TENSOR || !args[i]->u.tensor)
      return wrong_type(i, name, "a Tensor");
    *t = args[i]->u.tensor;
    return PTERON_OK;
  }
  int32_t integer(size_t i, const char* name, int64_t* v) const {
    if (args[i]->tag == PTERON_VALUE_INT) {
      *v = args[i]->u.i;
    } else if (args[i]->tag == PTERON_VALUE_BOOL) {
      *v = args[i]->u.b != 0;
    } else {
      return wrong_type(i, name, "an Int");
    }
    return PTERON_OK;
  }
};

// A scalar operand: Int (Bool widened to Int) or Double.
struct Num {
  bool is_int;
  bool is_bool;  // only for results of the comparisons
  int64_t i;
  double d;
  double as_double() const { return is_int ? static_cast<double>(i) : d; }
};

Num make_int(int64_t v) { return Num{true, false, v, 0.0}; }
Num make_double(double v) { return Num{false, false, 0, v}; }
Num make_bool(bool v) { return Num{true, true, v ? 1 : 0, 0.0}; }

int32_t read_num(const Call& c, size_t i, const char* name, Num* out) {
  const pteron_value* v = c.args[i];
  switch (v->tag) {
    case PTERON_VALUE_INT: *out = make_int(v->u.i); return PTERON_OK;
    case PTERON_VALUE_BOOL: *out = make_int(v->u.b != 0); return PTERON_OK;
    case PTERON_VALUE_DOUBLE: *out = make_double(v->u.d); return PTERON_OK;
    default: return c.wrong_type(i, name, "an Int, Double or Bool");
  }
}

void write_num(pteron_value* out, const Num& r) {
  if (r.is_bool) {
    out->tag = PTERON_VALUE_BOOL;
    out->u.b = r.i != 0;
  } else if (r.is_int) {
    out->tag = PTERON_VALUE_INT;
    out->u.i = r.i;
  } else {
    out->tag = PTERON_VALUE_DOUBLE;
    out->u.d = r.d;
  }
}

// Writes result `r` into the result slot `i`. A Bool slot takes only a Bool:
// the executor reads Bool values as jump conditions (validated at load), so
// their type never changes; Int, Double and None slots (the exporter's
// placeholders) take any scalar.
int32_t store(const Call& c, size_t i, const Num& r) {
  if (c.args[i]->tag == PTERON_VALUE_BOOL && !r.is_bool)
    return c.fail(PTERON_ERROR_INVALID_PROGRAM,
                  format("argument %zu ('out') is a Bool, the result is %s", i,
                         r.is_int ? "an Int" : "a Double"));
  write_num(c.args[i], r);
  return PTERON_OK;
}

// Double -> Int as Python's int()/math.trunc() after rounding: finite and in range.
int32_t to_int(const Call& c, double v, const char* what, Num* out) {
  // 2^63 is exactly representable; every double below it in magnitude fits.
  if (!std::isfinite(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0)
    return c.fail(PTERON_ERROR_INVALID_ARGUMENT,
                  format("%s of %g is not representable as an Int", what, v));
  *out = make_int(static_cast<int64_t>(v));
  return PTERON_OK;
}

int32_t overflow(const Call& c, const Num& a, const Num& b) {
  return c.fail(PTERON_ERROR_INVALID_ARGUMENT,
                format("%lld and %lld overflow a 64-bit Int", (long long)a.i, (long long)b.i));
}

// 64-bit integer arithmetic that reports overflow instead of wrapping (portable: MSVC has no
// __builtin_*_overflow). Each returns true on overflow and leaves *r unset then.
bool add_overflows(int64_t a, int64_t b, int64_t* r) {
  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return true;
  *r = a + b;
  return false;
}

bool sub_overflows(int64_t a, int64_t b, int64_t* r) {
  if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return true;
  *r = a - b;
  return false;
}

bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
  const bool overflows = a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                               : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a));
  if (overflows) return true;
  *r = a * b;
  return false;
}

enum class Bin { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Max, Min, Eq, Gt, Lt, Ge, Le };

int32_t binary(const Call& c, Bin op, const Num& a, const Num& b, Num* r) {
  const bool ints = a.is_int && b.is_int;
  const double x = a.as_double(), y = b.as_double();
  switch (op) {
    case Bin::Add:
      if (!ints) {
        *r = make_double(x + y);
        return PTERON_OK;
      }
      if (add_overflows(a.i, b.i, &r->i)) return overflow(c, a, b);
      *r = make_int(r->i);
      return PTERON_OK;
    case Bin::Sub:
      if (!ints) {
        *r = make_double(x - y);
        return PTERON_OK;
      }
      if (sub_overflows(a.i, b.i, &r->i)) return overflow(c, a, b);
      *r = make_int(r->i);
      return PTERON_OK;
    case Bin::Mul:
      if (!ints) {
        *r = make_double(x * y);
        return PTERON_OK;
      }
      if (mul_overflows(a.i, b.i, &r->i)) return overflow(c, a, b);
      *r = make_int(r->i);
      return PTERON_OK;
    case Bin::TrueDiv:
      if (y == 0.0) return c.fail(PTERON_ERROR_INVALID_ARGUMENT, "division by zero");
      *r = make_double(x / y);
      return PTERON_OK;
    case Bin::FloorDiv:
    case Bin::Mod: {
      if (ints ? b.i == 0 : y == 0.0)
        return c.fail(PTERON_ERROR_INVALID_ARGUMENT,
                      op == Bin::Mod ? "modulo by zero" : "division by zero");
      if (!ints) {
        // Python's float divmod: the remainder takes the divisor's sign.
        double m = std::fmod(x, y), q = (x - m) / y;
        if (m != 0.0 && ((m < 0.0) != (y < 0.0))) {
          m += y;
          q -= 1.0;
        }
        double f = std::floor(q);
        if (q - f > 0.5) f += 1.0;
        *r = make_double(op == Bin::Mod ? m : f);
        return PTERON_OK;
      }
      if (b.i == -1) {  // INT64_MIN / -1 overflows; anything % -1 is 0
        if (op == Bin::Mod) {
          *r = make_int(0);
          return PTERON_OK;
        }
        if (a.i == INT64_MIN) return overflow(c, a, b);
        *r = make_int(-a.i);
        return PTERON_OK;
      }
      int64_t q = a.i / b.i, m = a.i % b.i;
      if (m != 0 && ((m < 0) != (b.i < 0))) {
        --q;
        m += b.i;
      }
      *r = make_int(op == Bin::Mod ? m : q);
      return PTERON_OK;
    }
    case Bin::Max:
    case Bin::Min: {
      bool first;
      if (ints)
        first = op == Bin::Max ? a.i >= b.i : a.i <= b.i;
      else
        first = op == Bin::Max ? x >= y : x <= y;
      const Num& pick = first ? a : b;
      *r = ints ? make_int(pick.i) : make_double(pick.as_double());
      return PTERON_OK;
    }
    default: break;
  }
  // Comparisons: exact on two Ints, as doubles otherwise.
  int cmp = ints ? (a.i < b.i ? -1 : a.i > b.i ? 1 : 0) : (x < y ? -1 : x > y ? 1 : 0);
  bool unordered = !ints && (std::isnan(x) || std::isnan(y));
  bool v = false;
  switch (op) {
    case Bin::Eq: v = !unordered && cmp == 0; break;
    case Bin::Gt: v = !unordered && cmp > 0; break;
    case Bin::Lt: v = !unordered && cmp < 0; break;
    case Bin::Ge: v = !unordered && cmp >= 0; break;
    case Bin::Le: v = !unordered && cmp <= 0; break;
    default: break;
  }
  *r = make_bool(v);
  return PTERON_OK;
}

// (a, b, out): a scalar binary operator. `ints_only` for the .int overloads.
int32_t run_binary(pteron_kernel_context* ctx, const char* op, pteron_value* const* args, size_t n,
                   Bin which, bool ints_only) {
  Call c{ctx, op, args, n};
  int32_t rc = c.arity(3);
  if (rc == PTERON_OK) rc = c.check_out(2);
  if (rc != PTERON_OK) return rc;
  Num a{}, b{}, r{};
  if (ints_only) {
    rc = c.integer(0, "a", &a.i);
    if (rc == PTERON_OK) rc = c.integer(1, "b", &b.i);
    a.is_int = b.is_int = true;
  } else {
    rc = read_num(c, 0, "a", &a);
    if (rc == PTERON_OK) rc = read_num(c, 1, "b", &b);
  }
  if (rc == PTERON_OK) rc = binary(c, which, a, b, &r);
  if (rc != PTERON_OK) return rc;
  return store(c, 2, r);
}

#define PTERON_PRIM_BINARY(fn, op, which, ints_only)                            \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return run_binary(ctx, op, args, n, which, ints_only);                      \
  }
PTERON_PRIM_BINARY(prim_add, "executorch_prim::add.Scalar", Bin::Add, false)
PTERON_PRIM_BINARY(prim_sub, "executorch_prim::sub.Scalar", Bin::Sub, false)
PTERON_PRIM_BINARY(prim_mul, "executorch_prim::mul.Scalar", Bin::Mul, false)
PTERON_PRIM_BINARY(prim_floordiv, "executorch_prim::floordiv.Scalar", Bin::FloorDiv, false)
PTERON_PRIM_BINARY(prim_floordiv_int, "executorch_prim::floordiv.int", Bin::FloorDiv, true)
PTERON_PRIM_BINARY(prim_truediv, "executorch_prim::truediv.Scalar", Bin::TrueDiv, false)
PTERON_PRIM_BINARY(prim_mod, "executorch_prim::mod.Scalar", Bin::Mod, false)
PTERON_PRIM_BINARY(prim_mod_int, "executorch_prim::mod.int", Bin::Mod, true)
PTERON_PRIM_BINARY(prim_sym_max, "executorch_prim::sym_max.Scalar", Bin::Max, false)
PTERON_PRIM_BINARY(prim_sym_min, "executorch_prim::sym_min.Scalar", Bin::Min, false)
PTERON_PRIM_BINARY(prim_eq, "executorch_prim::eq.Scalar", Bin::Eq, false)
PTERON_PRIM_BINARY(prim_gt, "executorch_prim::gt.Scalar", Bin::Gt, false)
PTERON_PRIM_BINARY(prim_lt, "executorch_prim::lt.Scalar", Bin::Lt, false)
PTERON_PRIM_BINARY(prim_ge, "executorch_prim::ge.Scalar", Bin::Ge, false)
PTERON_PRIM_BINARY(prim_le, "executorch_prim::le.Scalar", Bin::Le, false)
#undef PTERON_PRIM_BINARY

enum class Un { Neg, Ceil, Round, Trunc, Float, Int, Not };

int32_t unary(const Call& c, Un op, const Num& a, Num* r) {
  switch (op) {
    case Un::Neg:
      if (!a.is_int) {
        *r = make_double(-a.d);
        return PTERON_OK;
      }
      if (a.i == INT64_MIN)
        return c.fail(PTERON_ERROR_INVALID_ARGUMENT, "-(-2^63) overflows a 64-bit Int");
      *r = make_int(-a.i);
      return PTERON_OK;
    case Un::Float: *r = make_double(a.as_double()); return PTERON_OK;
    case Un::Not: *r = make_bool(a.is_int ? a.i == 0 : a.d == 0.0); return PTERON_OK;
    default: break;
  }
  // ceil, round, trunc, sym_int: an Int stays as it is; a Double becomes an Int.
  if (a.is_int) {
    *r = make_int(a.i);
    return PTERON_OK;
  }
  double v = a.d;
  const char* what = "trunc";
  if (op == Un::Ceil) {
    v = std::ceil(v);
    what = "ceil";
  } else if (op == Un::Round) {
    // Python's round(): halfway cases to the even neighbour.
    double f = std::floor(v), diff = v - f;
    v = diff > 0.5 ? f + 1.0 : diff < 0.5 ? f : (std::fmod(f, 2.0) == 0.0 ? f : f + 1.0);
    what = "round";
  } else {
    v = std::trunc(v);
    if (op == Un::Int) what = "int";
  }
  return to_int(c, v, what, r);
}

// (a, out): a scalar unary operator.
int32_t run_unary(pteron_kernel_context* ctx, const char* op, pteron_value* const* args, size_t n,
                  Un which) {
  Call c{ctx, op, args, n};
  int32_t rc = c.arity(2);
  if (rc == PTERON_OK) rc = c.check_out(1);
  if (rc != PTERON_OK) return rc;
  Num a{}, r{};
  rc = read_num(c, 0, "a", &a);
  if (rc == PTERON_OK) rc = unary(c, which, a, &r);
  if (rc != PTERON_OK) return rc;
  return store(c, 1, r);
}

#define PTERON_PRIM_UNARY(fn, op, which)                                        \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return run_unary(ctx, op, args, n, which);                                  \
  }
PTERON_PRIM_UNARY(prim_neg, "executorch_prim::neg.Scalar", Un::Neg)
PTERON_PRIM_UNARY(prim_ceil, "executorch_prim::ceil.Scalar", Un::Ceil)
PTERON_PRIM_UNARY(prim_round, "executorch_prim::round.Scalar", Un::Round)
PTERON_PRIM_UNARY(prim_trunc, "executorch_prim::trunc.Scalar", Un::Trunc)
PTERON_PRIM_UNARY(prim_sym_float, "executorch_prim::sym_float.Scalar", Un::Float)
PTERON_PRIM_UNARY(prim_sym_int, "executorch_prim::sym_int.Scalar", Un::Int)
PTERON_PRIM_UNARY(prim_sym_not, "executorch_prim::sym_not.Scalar", Un::Not)
#undef PTERON_PRIM_UNARY

// executorch_prim::sym_ite.Scalar(b, t, f, out): t if b else f.
int32_t prim_sym_ite(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "executorch_prim::sym_ite.Scalar", args, n};
  int32_t rc = c.arity(4);
  if (rc == PTERON_OK) rc = c.check_out(3);
  if (rc != PTERON_OK) return rc;
  Num b{}, t{}, f{};
  rc = read_num(c, 0, "b", &b);
  if (rc == PTERON_OK) rc = read_num(c, 1, "t", &t);
  if (rc == PTERON_OK) rc = read_num(c, 2, "f", &f);
  if (rc != PTERON_OK) return rc;
  bool cond = b.is_int ? b.i != 0 : b.d != 0.0;
  // The chosen value keeps its own type (Bool included).
  const pteron_value& pick = *args[cond ? 1 : 2];
  if (args[3]->tag == PTERON_VALUE_BOOL && pick.tag != PTERON_VALUE_BOOL)
    return c.fail(PTERON_ERROR_INVALID_PROGRAM,
                  format("argument 3 ('out') is a Bool, the result is %s",
                         pteron_value_tag_name(pick.tag)));
  *args[3] = pick;
  return PTERON_OK;
}

int64_t numel(const pteron_tensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.dim; ++d) n *= t.sizes[d];
  return n;
}

bool contiguous(const pteron_tensor& t) {
  for (int32_t d = 0; d < t.dim; ++d)
    if (t.dim_order[d] != d) return false;
  return true;
}

// aten::sym_size.int(self, dim, out): self.size(dim), dim in [-rank, rank).
int32_t sym_size_int(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "aten::sym_size.int", args, n};
  int32_t rc = c.arity(3);
  if (rc == PTERON_OK) rc = c.check_out(2);
  pteron_tensor* t = nullptr;
  int64_t dim = 0;
  if (rc == PTERON_OK) rc = c.tensor(0, "self", &t);
  if (rc == PTERON_OK) rc = c.integer(1, "dim", &dim);
  if (rc != PTERON_OK) return rc;
  int64_t d = dim < 0 ? dim + t->dim : dim;
  if (d < 0 || d >= t->dim)
    return c.fail(PTERON_ERROR_INVALID_ARGUMENT,
                  format("dim %lld is out of range for a rank-%d tensor", (long long)dim, t->dim));
  return store(c, 2, make_int(t->sizes[d]));
}

// aten::sym_numel(self, out): the element count of self.
int32_t sym_numel(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "aten::sym_numel", args, n};
  int32_t rc = c.arity(2);
  if (rc == PTERON_OK) rc = c.check_out(1);
  pteron_tensor* t = nullptr;
  if (rc == PTERON_OK) rc = c.tensor(0, "self", &t);
  if (rc != PTERON_OK) return rc;
  return store(c, 1, make_int(numel(*t)));
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);  // zero and subnormals
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// aten::_local_scalar_dense(self, out): the one element of self as an Int
// (integral dtypes), a Double (floating dtypes) or a Bool.
int32_t local_scalar_dense(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "aten::_local_scalar_dense", args, n};
  int32_t rc = c.arity(2);
  if (rc == PTERON_OK) rc = c.check_out(1);
  pteron_tensor* t = nullptr;
  if (rc == PTERON_OK) rc = c.tensor(0, "self", &t);
  if (rc != PTERON_OK) return rc;
  if (numel(*t) != 1)
    return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                  format("a tensor with %lld elements cannot be converted to a scalar",
                         (long long)numel(*t)));
  const size_t es = pteron::element_size(t->dtype);
  if (!t->data || es == 0 || t->capacity_bytes < static_cast<int64_t>(es))
    return c.fail(PTERON_ERROR_INVALID_ARGUMENT, "the tensor has no storage for its element");
  const void* p = t->data;
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  Num r{};
  switch (t->dtype) {
    case PTERON_DTYPE_UINT8: r = make_int(load(uint8_t{})); break;
    case PTERON_DTYPE_INT8: r = make_int(load(int8_t{})); break;
    case PTERON_DTYPE_INT16: r = make_int(load(int16_t{})); break;
    case PTERON_DTYPE_INT32: r = make_int(load(int32_t{})); break;
    case PTERON_DTYPE_INT64: r = make_int(load(int64_t{})); break;
    case PTERON_DTYPE_UINT16: r = make_int(load(uint16_t{})); break;
    case PTERON_DTYPE_UINT32: r = make_int(load(uint32_t{})); break;
    case PTERON_DTYPE_UINT64: {
      uint64_t v = load(uint64_t{});
      if (v > static_cast<uint64_t>(INT64_MAX))
        return c.fail(PTERON_ERROR_INVALID_ARGUMENT,
                      format("uint64 value %llu does not fit an Int", (unsigned long long)v));
      r = make_int(static_cast<int64_t>(v));
      break;
    }
    case PTERON_DTYPE_FLOAT16: r = make_double(half_to_float(load(uint16_t{}))); break;
    case PTERON_DTYPE_BFLOAT16: r = make_double(bfloat16_to_float(load(uint16_t{}))); break;
    case PTERON_DTYPE_FLOAT32: r = make_double(load(float{})); break;
    case PTERON_DTYPE_FLOAT64: r = make_double(load(double{})); break;
    case PTERON_DTYPE_BOOL: r = make_bool(load(uint8_t{}) != 0); break;
    default:
      return c.fail(PTERON_ERROR_UNSUPPORTED_DTYPE,
                    format("dtype %s has no scalar form", pteron_dtype_name(t->dtype)));
  }
  return store(c, 1, r);
}

// executorch_prim::et_view.default(self, size, out): out takes the sizes
// `size` (one entry may be -1) and shares self's storage. Both must be
// contiguous (the exporter emits et_view only for those) and of one dtype.
int32_t et_view(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "executorch_prim::et_view.default", args, n};
  int32_t rc = c.arity(3);
  pteron_tensor *self = nullptr, *out = nullptr;
  if (rc == PTERON_OK) rc = c.tensor(0, "self", &self);
  if (rc == PTERON_OK && args[1]->tag != PTERON_VALUE_INT_LIST)
    rc = c.wrong_type(1, "size", "an IntList");
  if (rc == PTERON_OK) rc = c.tensor(2, "out", &out);
  if (rc != PTERON_OK) return rc;
  if (self->dtype != out->dtype)
    return c.fail(PTERON_ERROR_INVALID_PROGRAM,
                  format("self is %s, out is %s", pteron_dtype_name(self->dtype),
                         pteron_dtype_name(out->dtype)));
  if (!contiguous(*self) || !contiguous(*out))
    return c.fail(PTERON_ERROR_NOT_SUPPORTED, "a view of a tensor that is not contiguous");
  const int64_t* size = args[1]->u.int_list.data;
  size_t rank = args[1]->u.int_list.size;
  if (rank != static_cast<size_t>(out->dim) || (rank && !size))
    return c.fail(PTERON_ERROR_INVALID_PROGRAM,
                  format("size has %zu entries, out has rank %d", rank, out->dim));
  int64_t sizes[PTERON_MAX_DIM];
  int64_t known = 1, total = numel(*self);
  int infer = -1;
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] = size[d];
    if (size[d] == -1 && infer < 0) {
      infer = static_cast<int>(d);
    } else if (size[d] < 0 || !pteron::checked_mul(known, size[d], &known)) {
      return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                    format("invalid size %lld at dim %zu", (long long)size[d], d));
    }
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                    format("shape with -1 cannot view %lld elements", (long long)total));
    sizes[infer] = total / known;
    known = total;
  }
  if (known != total)
    return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                  format("cannot view %lld elements as %lld", (long long)total, (long long)known));
  if (total > 0 && !self->data) return c.fail(PTERON_ERROR_INVALID_ARGUMENT, "self has no storage");
  out->data = self->data;
  out->capacity_bytes = self->data ? self->capacity_bytes : 0;
  return pteron_tensor_resize(ctx, out, sizes, out->dim);
}

// executorch_prim::et_copy_index.tensor(copy_to, copy_from, index): row
// `index` of copy_to becomes copy_from, and copy_to's size along dim 0
// becomes index + 1 (a loop stacks one row per iteration).
int32_t et_copy_index(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Call c{ctx, "executorch_prim::et_copy_index.tensor", args, n};
  int32_t rc = c.arity(3);
  pteron_tensor *to = nullptr, *from = nullptr;
  int64_t index = 0;
  if (rc == PTERON_OK) rc = c.tensor(0, "copy_to", &to);
  if (rc == PTERON_OK) rc = c.tensor(1, "copy_from", &from);
  if (rc == PTERON_OK) rc = c.integer(2, "index", &index);
  if (rc != PTERON_OK) return rc;
  if (to == from)
    return c.fail(PTERON_ERROR_INVALID_PROGRAM, "copy_to and copy_from are one tensor");
  if (to->dtype != from->dtype)
    return c.fail(PTERON_ERROR_INVALID_PROGRAM,
                  format("copy_to is %s, copy_from is %s", pteron_dtype_name(to->dtype),
                         pteron_dtype_name(from->dtype)));
  if (to->dim != from->dim + 1)
    return c.fail(
        PTERON_ERROR_SHAPE_MISMATCH,
        format("copy_to has rank %d, copy_from rank %d: expected one more", to->dim, from->dim));
  if (!contiguous(*to) || !contiguous(*from))
    return c.fail(PTERON_ERROR_NOT_SUPPORTED, "copy_to or copy_from is not contiguous");
  if (index < 0 || index >= to->bound[0])
    return c.fail(PTERON_ERROR_SHAPE_MISMATCH, format("index %lld is outside [0, %lld)",
                                                      (long long)index, (long long)to->bound[0]));
  int64_t sizes[PTERON_MAX_DIM];
  sizes[0] = index + 1;
  for (int32_t d = 0; d < from->dim; ++d) sizes[d + 1] = from->sizes[d];
  if (to->dynamism == PTERON_SHAPE_STATIC) {
    // A static result keeps its sizes; each row must match them.
    for (int32_t d = 0; d < from->dim; ++d)
      if (to->sizes[d + 1] != from->sizes[d])
        return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                      format("copy_from has size %lld at dim %d, copy_to rows %lld",
                             (long long)from->sizes[d], d, (long long)to->sizes[d + 1]));
  } else {
    rc = pteron_tensor_resize(ctx, to, sizes, to->dim);
    if (rc != PTERON_OK) return rc;
  }
  const int64_t row = numel(*from) * static_cast<int64_t>(pteron::element_size(from->dtype));
  if (row == 0) return PTERON_OK;
  int64_t end = 0;
  if (!to->data || !from->data || !pteron::checked_mul(index + 1, row, &end) ||
      end > to->capacity_bytes)
    return c.fail(PTERON_ERROR_SHAPE_MISMATCH,
                  format("row %lld does not fit copy_to's storage", (long long)index));
  std::memmove(static_cast<char*>(to->data) + index * row, from->data, static_cast<size_t>(row));
  return PTERON_OK;
}

const pteron_kernel_registration kPrimOps[] = {
    {"aten::sym_size", "int", nullptr, sym_size_int, 0, 0},
    {"aten::sym_numel", "", nullptr, sym_numel, 0, 0},
    {"aten::_local_scalar_dense", "", nullptr, local_scalar_dense, 0, 0},
    {"executorch_prim::et_view", "default", nullptr, et_view, 0, 0},
    {"executorch_prim::et_copy_index", "tensor", nullptr, et_copy_index, 0, 0},
    {"executorch_prim::add", "Scalar", nullptr, prim_add, 0, 0},
    {"executorch_prim::sub", "Scalar", nullptr, prim_sub, 0, 0},
    {"executorch_prim::mul", "Scalar", nullptr, prim_mul, 0, 0},
    {"executorch_prim::floordiv", "Scalar", nullptr, prim_floordiv, 0, 0},
    {"executorch_prim::floordiv", "int", nullptr, prim_floordiv_int, 0, 0},
    {"executorch_prim::truediv", "Scalar", nullptr, prim_truediv, 0, 0},
    {"executorch_prim::mod", "Scalar", nullptr, prim_mod, 0, 0},
    {"executorch_prim::mod", "int", nullptr, prim_mod_int, 0, 0},
    {"executorch_prim::neg", "Scalar", nullptr, prim_neg, 0, 0},
    {"executorch_prim::eq", "Scalar", nullptr, prim_eq, 0, 0},
    {"executorch_prim::gt", "Scalar", nullptr, prim_gt, 0, 0},
    {"executorch_prim::lt", "Scalar", nullptr, prim_lt, 0, 0},
    {"executorch_prim::ge", "Scalar", nullptr, prim_ge, 0, 0},
    {"executorch_prim::le", "Scalar", nullptr, prim_le, 0, 0},
    {"executorch_prim::ceil", "Scalar", nullptr, prim_ceil, 0, 0},
    {"executorch_prim::round", "Scalar", nullptr, prim_round, 0, 0},
    {"executorch_prim::trunc", "Scalar", nullptr, prim_trunc, 0, 0},
    {"executorch_prim::sym_float", "Scalar", nullptr, prim_sym_float, 0, 0},
    {"executorch_prim::sym_int", "Scalar", nullptr, prim_sym_int, 0, 0},
    {"executorch_prim::sym_max", "Scalar", nullptr, prim_sym_max, 0, 0},
    {"executorch_prim::sym_min", "Scalar", nullptr, prim_sym_min, 0, 0},
    {"executorch_prim::sym_not", "Scalar", nullptr, prim_sym_not, 0, 0},
    {"executorch_prim::sym_ite", "Scalar", nullptr, prim_sym_ite, 0, 0},
};

// Registered when the runtime library loads, before any method can.
struct RegisterPrimOps {
  RegisterPrimOps() {
    pteron_register_kernels(PTERON_ABI_VERSION, "runtime", kPrimOps,
                            sizeof kPrimOps / sizeof kPrimOps[0]);
  }
} register_prim_ops;

}  // namespace
