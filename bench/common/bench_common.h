// SPDX-License-Identifier: BSD-3-Clause
// bench_common.h - what both benchmark runners (bench/peer and bench/pteron)
// share: a small .npy reader (NumPy's documented format, versions 1-3, C order,
// little-endian), a deterministic input fill, the median, and the one JSON
// result line run.py reads. Header-only and independent of either runtime, so
// the two runners measure the same way.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace bench {

struct Npy {
  std::string descr;  // "<f4", "<i8", "|b1", ...
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;
};

// Returns "" on success, else a message naming the file.
inline std::string read_npy(const std::string& path, Npy* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open '" + path + "'";
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(f)),
                               std::istreambuf_iterator<char>());
  if (b.size() < 10 || b[0] != 0x93 || std::string(b.begin() + 1, b.begin() + 6) != "NUMPY")
    return "'" + path + "' is not a .npy file";
  size_t hlen, off;
  if (b[6] == 1) {
    hlen = b[8] | (size_t(b[9]) << 8);
    off = 10;
  } else {
    if (b.size() < 12) return "'" + path + "': truncated header";
    hlen = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24);
    off = 12;
  }
  if (off + hlen > b.size()) return "'" + path + "': truncated header";
  std::string h(b.begin() + off, b.begin() + off + hlen);
  auto field = [&](const char* key) -> std::string {
    size_t k = h.find(key);
    if (k == std::string::npos) return "";
    k = h.find(':', k);
    return k == std::string::npos ? "" : h.substr(k + 1);
  };
  std::string d = field("'descr'");
  size_t q1 = d.find('\''), q2 = d.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return "'" + path + "': no descr";
  out->descr = d.substr(q1 + 1, q2 - q1 - 1);
  if (field("'fortran_order'").find("True") < 8)
    return "'" + path + "': Fortran order is not supported";
  std::string s = field("'shape'");
  size_t p1 = s.find('('), p2 = s.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) return "'" + path + "': no shape";
  out->shape.clear();
  std::string cur;
  for (size_t i = p1 + 1; i <= p2; ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9')
      cur += c;
    else if (!cur.empty()) {
      out->shape.push_back(std::stoll(cur));
      cur.clear();
    }
  }
  out->data.assign(b.begin() + off + hlen, b.end());
  return "";
}

inline size_t descr_itemsize(const std::string& d) {
  return d.size() >= 3 ? size_t(std::stoi(d.substr(2))) : 0;
}

// Fixed fill for inputs without a file: a smooth pattern in [-1, 1] (floats) or
// small non-negative integers, the same on both sides.
inline double fill_value(size_t i, bool integral) {
  return integral ? double(i % 7) : double(int64_t(i % 17) - 8) / 8.0;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The process's peak resident set (VmHWM of /proc/self/status, kB), or -1.
// Not getrusage(): Linux carries ru_maxrss across exec, so a child of a big
// parent (Python) would report the parent's peak.
inline long long peak_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// One line for run.py: BENCH_RESULT {...}. `extra`: more JSON members
// ("\"key\": value, ..."), or empty.
inline void print_result(const char* runner, double load_ms, const std::vector<double>& times,
                         long threads, double out0_sum, long long out0_numel,
                         const std::string& extra = std::string()) {
  std::printf("median time per execution: %.4f ms over %zu iteration(s); load and init %.3f ms\n",
              median(times), times.size(), load_ms);
  std::printf(
      "BENCH_RESULT {\"runner\": \"%s\", \"load_ms\": %.6f, \"threads\": %ld, "
      "\"out0_sum\": %.9g, \"out0_numel\": %lld, \"peak_rss_kb\": %lld, ",
      runner, load_ms, threads, out0_sum, out0_numel, peak_rss_kb());
  if (!extra.empty()) std::printf("%s, ", extra.c_str());
  std::printf("\"times_ms\": [");
  for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? ", " : "", times[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

struct Args {
  std::string model, method = "forward";
  std::vector<std::string> inputs;
  long warmup = 1, iterations = 5, threads = 0;
};

// Parses MODEL.pte [--method M] [--input F.npy]... [--warmup N] [--iterations N]
// [--threads N]. Returns "" or a usage message.
inline std::string parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    auto number = [&](long lo, long hi, long* dst) -> bool {
      std::string v = value();
      char* end = nullptr;
      long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || x < lo || x > hi) return false;
      *dst = x;
      return true;
    };
    if (s == "--method")
      a->method = value();
    else if (s == "--input")
      a->inputs.push_back(value());
    else if (s == "--warmup") {
      if (!number(0, 100000, &a->warmup)) return "--warmup needs 0..100000";
    } else if (s == "--iterations") {
      if (!number(1, 1000000, &a->iterations)) return "--iterations needs 1..1000000";
    } else if (s == "--threads") {
      if (!number(0, 1024, &a->threads)) return "--threads needs 0..1024";
    } else if (!s.empty() && s[0] == '-')
      return "unknown option '" + s + "'";
    else if (a->model.empty())
      a->model = s;
    else
      return "unexpected argument '" + s + "'";
  }
  if (a->model.empty()) return "no program given";
  return "";
}

}  // namespace bench
