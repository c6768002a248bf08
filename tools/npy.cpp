// SPDX-License-Identifier: BSD-3-Clause
// npy.cpp - see npy.h.
#include "npy.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include "pteron/kernel.h"

namespace pteron_tools {
namespace {

struct DescrMap {
  const char* descr;
  int32_t dtype;
  size_t size;
};
// complex64 / complex128 (<c8, <c16) are numpy's interleaved (real,
// imaginary) pairs, pteron's layout of them (pteron/types.h).
const DescrMap kDescrs[] = {
    {"<f4", PTERON_DTYPE_FLOAT32, 4},      {"<f8", PTERON_DTYPE_FLOAT64, 8},
    {"<i4", PTERON_DTYPE_INT32, 4},        {"<i8", PTERON_DTYPE_INT64, 8},
    {"<i2", PTERON_DTYPE_INT16, 2},        {"|i1", PTERON_DTYPE_INT8, 1},
    {"|u1", PTERON_DTYPE_UINT8, 1},        {"|b1", PTERON_DTYPE_BOOL, 1},
    {"<f2", PTERON_DTYPE_FLOAT16, 2},      {"<c8", PTERON_DTYPE_COMPLEX64, 8},
    {"<c16", PTERON_DTYPE_COMPLEX128, 16}, {"<u2", PTERON_DTYPE_UINT16, 2},
    {"<u4", PTERON_DTYPE_UINT32, 4},       {"<u8", PTERON_DTYPE_UINT64, 8},
    // ml_dtypes' bfloat16 as np.save writes it (numpy knows no bfloat16: a 2-byte void)
    {"<V2", PTERON_DTYPE_BFLOAT16, 2},     {"|V2", PTERON_DTYPE_BFLOAT16, 2},
};

// `text` with every byte outside printable ASCII (and the quote) as \xNN, for a message.
std::string printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += char(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The header's dict (numpy.lib.format, NEP 1: a Python literal with exactly the keys descr,
// fortran_order and shape, each once, in any order, items separated by commas, a trailing comma
// allowed). Each value's text: a string's without its quotes, a tuple's without its
// parentheses, anything else as written; *shape_is_tuple says whether shape was "(...)".
// "" or why the header is not such a dict (what numpy's literal_eval and key check refuse).
std::string header_dict(const std::string& h, std::string* descr, std::string* fortran,
                        std::string* shape, bool* shape_is_tuple) {
  static const char* const kKeys[3] = {"descr", "fortran_order", "shape"};
  std::string* const out[3] = {descr, fortran, shape};
  bool seen[3] = {false, false, false};
  size_t i = 0;
  auto skip = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\n')) ++i;
  };
  auto at = [&] { return " at byte " + std::to_string(i); };
  skip();
  if (i >= h.size() || h[i] != '{') return "not a dict";
  ++i;
  for (;;) {
    skip();
    if (i < h.size() && h[i] == '}') break;
    if (i >= h.size() || h[i] != '\'') return "no quoted key" + at();
    size_t e = h.find('\'', i + 1);
    if (e == std::string::npos) return "an unterminated key" + at();
    const std::string key = h.substr(i + 1, e - i - 1);
    i = e + 1;
    skip();
    if (i >= h.size() || h[i] != ':') return "no ':' after the key '" + printable(key) + "'";
    ++i;
    skip();
    std::string value;
    bool tuple = false;
    if (i < h.size() && h[i] == '\'') {
      e = h.find('\'', i + 1);
      if (e == std::string::npos) return "an unterminated string" + at();
      value = h.substr(i + 1, e - i - 1);
      i = e + 1;
    } else if (i < h.size() && (h[i] == '(' || h[i] == '[')) {  // a tuple or a list, nested
      tuple = h[i] == '(';
      int depth = 0;
      for (e = i; e < h.size(); ++e) {
        if (h[e] == '(' || h[e] == '[') ++depth;
        if ((h[e] == ')' || h[e] == ']') && --depth == 0) break;
      }
      if (e >= h.size()) return "an unclosed bracket" + at();
      value = tuple ? h.substr(i + 1, e - i - 1) : h.substr(i, e - i + 1);
      i = e + 1;
    } else {
      e = h.find_first_of(",} \n", i);
      if (e == std::string::npos) e = h.size();
      value = h.substr(i, e - i);
      i = e;
    }
    int slot = -1;
    for (int k = 0; k < 3; ++k)
      if (key == kKeys[k]) slot = k;
    if (slot < 0)
      return "an unexpected key '" + printable(key) +
             "' (numpy writes descr, fortran_order and shape only)";
    if (seen[slot]) return "the key '" + key + "' given twice";
    seen[slot] = true;
    *out[slot] = value;
    if (slot == 2) *shape_is_tuple = tuple;
    skip();
    if (i < h.size() && h[i] == ',') {
      ++i;
      continue;
    }
    if (i < h.size() && h[i] == '}') break;
    return "text after the value of '" + key + "'" + at();
  }
  ++i;  // the '}'
  skip();
  if (i != h.size()) return "text after the dict" + at();
  for (int k = 0; k < 3; ++k)
    if (!seen[k]) return std::string("no key '") + kKeys[k] + "'";
  return "";
}

}  // namespace

const char* npy_descr(int32_t dtype) {
  for (const DescrMap& d : kDescrs)
    if (d.dtype == dtype) return d.descr;
  return "";
}

std::string npy_read(const std::string& path, NpyArray* out) {
  // UTF-8 path (wide on Windows). Only regular files: opening a FIFO or a
  // device for reading could block forever or never end.
  const std::filesystem::path fp = std::filesystem::u8path(path);
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(fp, ec);
  if (ec) return "cannot open '" + path + "': " + ec.message();
  if (!std::filesystem::is_regular_file(st)) return "'" + path + "' is not a regular file";
  errno = 0;
  std::ifstream f(fp, std::ios::binary);
  if (!f) return "cannot open '" + path + "': " + (errno ? std::strerror(errno) : "unknown error");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)),
                                   std::istreambuf_iterator<char>());
  if (f.bad()) return "cannot read '" + path + "'";
  return npy_parse(bytes.data(), bytes.size(), "'" + path + "'", out);
}

std::string npy_parse(const unsigned char* data, size_t size, const std::string& name,
                      NpyArray* out) {
  if (!data && size) return name + " is not a .npy file";
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    return name + " is not a .npy file";
  unsigned major = data[6], minor = data[7];
  if (minor != 0)  // numpy writes 1.0, 2.0 and 3.0 only
    return name + " has unsupported .npy version " + std::to_string(major) + "." +
           std::to_string(minor);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = data[8] | (size_t(data[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return name + " is truncated";
    hlen =
        data[8] | (size_t(data[9]) << 8) | (size_t(data[10]) << 16) | (size_t(data[11]) << 24);
    hstart = 12;
  } else {
    return name + " has unsupported .npy version " + std::to_string(major);
  }
  if (hstart + hlen > size) return name + " is truncated";
  std::string h(reinterpret_cast<const char*>(data + hstart), hlen);
  // The format (numpy.lib.format, NEP 1): the header is a Python dict
  // literal, padded with spaces and ended by one newline; nothing else.
  {
    size_t end = h.find_last_not_of(" \n");
    if (hlen == 0 || h.back() != '\n' || end == std::string::npos || h[0] != '{' || h[end] != '}' ||
        h.find('\n') != hlen - 1)
      return name + " has a malformed .npy header (not one dict ended by a newline)";
  }
  std::string descr, fortran, shape;
  bool shape_is_tuple = false;
  const std::string why = header_dict(h, &descr, &fortran, &shape, &shape_is_tuple);
  if (!why.empty()) return name + " has a malformed .npy header (" + why + ")";
  if (fortran == "True") return name + " is Fortran-ordered; save it C-ordered";
  if (fortran != "False")
    return name + " has a malformed .npy header (fortran_order is '" + printable(fortran) +
           "', not True or False)";
  // numpy reads '=' (native order) and a descr without an order character ('f4') as this
  // machine's order, little-endian on every target pteron is built for; a one-byte type has no
  // order, whatever character it is written with ('<u1', '>i1', '=b1').
  if (!descr.empty() && (descr[0] == '=' || std::isalpha(static_cast<unsigned char>(descr[0]))))
    descr = "<" + descr.substr(descr[0] == '=' ? 1 : 0);
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '>') && descr[2] == '1')
    descr[0] = '|';
  const DescrMap* dm = nullptr;
  for (const DescrMap& d : kDescrs)
    if (descr == d.descr) dm = &d;
  if (!dm) {
    if (descr.find_first_of("[(") != std::string::npos)
      return name + " has a structured dtype; pteron-run reads plain numeric arrays only";
    if (descr.size() > 1 && descr[0] == '>')
      return name + " has big-endian dtype '" + printable(descr) +
             "'; save it little-endian (numpy: a.astype(a.dtype.newbyteorder('<')))";
    return name + " has unsupported dtype '" + printable(descr) + "'";
  }
  out->dtype = dm->dtype;
  out->shape.clear();
  // shape is a Python tuple of non-negative ints: "()", "(N,)", "(N, M)",
  // "(N, M,)"; a trailing comma is allowed, an empty item anywhere else is not.
  std::vector<std::string> items;
  for (size_t pos = 0;;) {
    size_t e = shape.find(',', pos);
    std::string tok = shape.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    size_t a = tok.find_first_not_of(" "), b = tok.find_last_not_of(" ");
    items.push_back(a == std::string::npos ? std::string() : tok.substr(a, b - a + 1));
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  if (!shape_is_tuple)
    return name + " has a malformed .npy header (shape " + printable(shape) + " is not a tuple)";
  const bool scalar = items.size() == 1 && items[0].empty();  // "()"
  if (!scalar && items.size() == 1)                           // "(3)" is an int, not a tuple
    return name + " has a malformed shape '(" + printable(shape) + ")'";
  size_t numel = 1;
  for (size_t i = 0; i < items.size() && !scalar; ++i) {
    const std::string& tok = items[i];
    if (tok.empty()) {
      if (i + 1 == items.size() && i > 0) break;  // trailing comma
      return name + " has a malformed shape '(" + printable(shape) + ")'";
    }
    // Python's int literals: no leading zero ("04" is a syntax error to numpy).
    if (tok.find_first_not_of("0123456789") != std::string::npos ||
        (tok.size() > 1 && tok[0] == '0'))
      return name + " has a malformed shape '(" + printable(shape) + ")'";
    if (tok.size() > 18) return name + " has a shape too large for memory";
    const long long v = std::strtoll(tok.c_str(), nullptr, 10);
    out->shape.push_back(v);
    if (v != 0 && numel > std::numeric_limits<size_t>::max() / 16 / static_cast<size_t>(v))
      return name + " has a shape too large for memory";
    numel *= static_cast<size_t>(v);
  }
  size_t need = numel * dm->size;
  size_t dstart = hstart + hlen;
  if (size - dstart != need)
    return name + " holds " + std::to_string(size - dstart) +
           " data bytes, its shape needs " + std::to_string(need);
  out->data.assign(data + dstart, data + dstart + need);
  return "";
}

std::string npy_write(const std::string& path, const NpyArray& a) {
  const char* d = npy_descr(a.dtype);
  if (!*d) return "dtype has no .npy equivalent";
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    shape += std::to_string(a.shape[i]);
    if (a.shape.size() == 1 || i + 1 < a.shape.size()) shape += ",";
    if (i + 1 < a.shape.size()) shape += " ";
  }
  shape += ")";
  std::string h =
      "{'descr': '" + std::string(d) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  h += std::string(pad, ' ') + "\n";
  errno = 0;
  std::ofstream f(std::filesystem::u8path(path), std::ios::binary);
  if (!f) return "cannot write '" + path + "': " + (errno ? std::strerror(errno) : "unknown error");
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           static_cast<unsigned char>(h.size() & 0xff),
                           static_cast<unsigned char>(h.size() >> 8)};
  f.write(reinterpret_cast<const char*>(pre), 10);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(a.data.data()),
          static_cast<std::streamsize>(a.data.size()));
  f.flush();
  if (!f) return "cannot write '" + path + "': " + (errno ? std::strerror(errno) : "write failed");
  return "";
}

float bfloat16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float float16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {  // subnormal: man * 2^-24, exact in float32
    float f = static_cast<float>(man) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace pteron_tools
