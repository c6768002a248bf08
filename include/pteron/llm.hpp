// SPDX-License-Identifier: BSD-3-Clause
// pteron/llm.hpp - header-only text generation over pteron.hpp (and so over the C API), for
// decoder-only programs made by upstream ExecuTorch's LLM exporter (export_llama). Token ids
// in, token ids out; tokenizers are the application's (C++ has no standard one).
//
//   pteron::Program prog = pteron::Program::load_file("model.pte");
//   pteron::llm::Generator gen(prog);
//   pteron::llm::Options opt;
//   opt.max_new_tokens = 64;
//   opt.on_token = [](int64_t t) { std::printf("%lld ", (long long)t); };
//   pteron::llm::Result r = gen.generate({1, 15043, 3186}, opt);
//
// The program, as upstream's exporter writes it (read, not assumed):
//  - method "forward": token ids int64 [1, S] and, with a KV cache, the start position int64
//    [1]; it returns logits [1, vocabulary] of the last position (or [1, S, vocabulary]: the
//    last row is used), float32, or bfloat16 / float16 (widened to float32, exactly).
//  - metadata methods without inputs: get_max_seq_len, get_max_context_len, get_vocab_size,
//    use_kv_cache, enable_dynamic_shape, get_bos_id, get_eos_ids (or get_eos_id): one Int or
//    Bool output each (get_eos_ids: one per id). Missing ones take upstream's runner's
//    defaults (lengths 128, no BOS or EOS, the KV cache on when forward takes two inputs).
// The loop and its rules are python/pteron/llm.py's: prefill the prompt (one call with a
// dynamic token input, else one call per token), then one decode call per token at the next
// position. Greedy (argmax, the lowest id of equal maxima) when temperature <= 0; otherwise
// softmax(logits / temperature) cut to the smallest most-likely set reaching top_p, sampled
// with std::mt19937_64(seed) (a C++ seed does not reproduce the Python module's numpy draws).
// It stops at a stop token (the program's EOS ids unless Options::stop_tokens is set), after
// max_new_tokens (< 0: no limit) or when the context is full.
// Errors: pteron::Error with PTERON_ERROR_INVALID_ARGUMENT for an empty prompt, one longer
// than the program takes, a token outside the vocabulary, a start position outside the
// context (the message names the limit), a temperature that is not a number or a top_p
// outside (0, 1]; PTERON_ERROR_INVALID_PROGRAM for a forward of another shape or dtype; the
// runtime's own errors pass through.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "pteron.hpp"

namespace pteron {
namespace llm {

struct Options {
  int64_t max_new_tokens = -1;   // < 0: until a stop token or the context's end
  float temperature = 0.0f;      // <= 0: greedy
  float top_p = 1.0f;            // in (0, 1]
  uint64_t seed = 0;
  bool use_stop_tokens = false;  // true: stop_tokens below instead of the program's EOS ids
  std::vector<int64_t> stop_tokens;
  std::function<void(int64_t)> on_token;  // called with each new token as it is chosen
};

struct Result {
  std::vector<int64_t> tokens;  // generated (a stop token included when one ended it)
  std::string stop_reason;      // "stop_token", "max_new_tokens" or "context_full"
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  size_t prompt_tokens = 0;
  double prefill_tokens_per_second() const {
    return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0.0;
  }
  // Tokens from decode calls (the first generated token comes from the prefill).
  double decode_tokens_per_second() const {
    return decode_seconds > 0 && tokens.size() > 1
               ? static_cast<double>(tokens.size() - 1) / decode_seconds
               : 0.0;
  }
};

class Generator {
 public:
  // `program` must outlive the generator.
  explicit Generator(Program& program, const std::string& method = "forward")
      : forward_(program.load_method(method)) {
    const std::vector<std::string> names = program.method_names();
    auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    auto read = [&](const char* n, std::vector<int64_t>* out) {
      if (!has(n)) return false;
      Method m = program.load_method(n);
      m.execute();
      out->clear();
      for (size_t i = 0; i < m.output_count(); ++i) out->push_back(m.output_int(i));
      return !out->empty();
    };
    const size_t nin = forward_.input_count();
    const ValueInfo tok = nin > 0 ? forward_.input_info(0) : ValueInfo{};
    bool shaped = nin >= 1 && nin <= 2 && tok.is_tensor() && tok.dtype == PTERON_DTYPE_INT64 &&
                  tok.sizes.size() == 2;
    if (shaped && nin == 2) {
      const ValueInfo pos = forward_.input_info(1);
      shaped = pos.is_tensor() && pos.dtype == PTERON_DTYPE_INT64 && pos.sizes.size() == 1;
    }
    if (!shaped)
      throw Error(PTERON_ERROR_INVALID_PROGRAM,
                  "method '" + method + "' is not an LLM program's forward (it takes " +
                      std::to_string(nin) + " input(s); expected token ids int64 [1, S] and, "
                      "with a KV cache, the start position int64 [1])");
    std::vector<int64_t> v;
    use_kv_cache_ = read("use_kv_cache", &v) ? v[0] != 0 : nin == 2;
    if (use_kv_cache_ && nin != 2)
      throw Error(PTERON_ERROR_INVALID_PROGRAM, "use_kv_cache is true but '" + method +
                                                    "' takes one input");
    dynamic_ = read("enable_dynamic_shape", &v) ? v[0] != 0 : tok.dynamism != 0;
    max_seq_len_ = read("get_max_seq_len", &v) ? v[0] : 128;
    max_context_len_ = read("get_max_context_len", &v) ? v[0] : max_seq_len_;
    vocab_size_ = read("get_vocab_size", &v) ? v[0] : -1;
    has_bos_ = read("get_bos_id", &v);
    if (has_bos_) bos_id_ = v[0];
    if (!read("get_eos_ids", &eos_ids_)) read("get_eos_id", &eos_ids_);
    per_call_ = dynamic_ ? (tok.dynamism != 0 ? tok.bound[1] : tok.sizes[1]) : 1;
  }

  int64_t max_seq_len() const { return max_seq_len_; }
  int64_t max_context_len() const { return max_context_len_; }
  int64_t vocab_size() const { return vocab_size_; }  // -1: the program does not say
  bool use_kv_cache() const { return use_kv_cache_; }
  bool has_bos_id() const { return has_bos_; }
  int64_t bos_id() const { return bos_id_; }
  const std::vector<int64_t>& eos_ids() const { return eos_ids_; }

  // The longest prompt this program takes.
  int64_t max_prompt_tokens() const {
    if (!use_kv_cache_) return max_seq_len_ - 1;
    return dynamic_ ? std::min(max_context_len_ - 1, per_call_) : max_context_len_ - 1;
  }

  // The logits (float32, vocabulary values) after `tokens` at positions start_pos...: one
  // forward call.
  std::vector<float> logits(const std::vector<int64_t>& tokens, int64_t start_pos) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (use_kv_cache_ && (start_pos < 0 || start_pos > max_context_len_ - n))
      throw Error(PTERON_ERROR_INVALID_ARGUMENT,
                  "start position " + std::to_string(start_pos) + " with " + std::to_string(n) +
                      " token(s) does not fit the program's " +
                      std::to_string(max_context_len_) + " positions (get_max_context_len)");
    forward_.set_input(0, {1, n}, tokens);
    if (use_kv_cache_) forward_.set_input(1, {1}, std::vector<int64_t>{start_pos});
    forward_.execute();
    const ValueInfo info = forward_.output_info(0);
    std::vector<float> all;
    if (info.dtype == PTERON_DTYPE_BFLOAT16 || info.dtype == PTERON_DTYPE_FLOAT16) {
      const std::vector<unsigned char> bytes = forward_.output_bytes(0);
      all.resize(bytes.size() / 2);
      for (size_t i = 0; i < all.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        all[i] = info.dtype == PTERON_DTYPE_BFLOAT16 ? bf16_to_float(h) : f16_to_float(h);
      }
    } else {
      all = forward_.output<float>(0);
    }
    const size_t v = info.sizes.empty() ? all.size() : static_cast<size_t>(info.sizes.back());
    return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(v), all.end());
  }

  Result generate(const std::vector<int64_t>& prompt, const Options& opt = Options()) {
    check_prompt(prompt);
    if (!(opt.top_p > 0.0f && opt.top_p <= 1.0f))
      throw Error(PTERON_ERROR_INVALID_ARGUMENT, "top_p must be in (0, 1]");
    if (!std::isfinite(opt.temperature))
      throw Error(PTERON_ERROR_INVALID_ARGUMENT,
                  "temperature must be a finite number (0 or less: greedy)");
    const std::vector<int64_t>& stops = opt.use_stop_tokens ? opt.stop_tokens : eos_ids_;
    Result r;
    r.prompt_tokens = prompt.size();
    r.stop_reason = "max_new_tokens";
    if (opt.max_new_tokens == 0) return r;
    std::mt19937_64 rng(opt.seed);
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    std::vector<float> lg;
    if (!use_kv_cache_ || dynamic_) {
      lg = logits(prompt, 0);
    } else {
      for (size_t i = 0; i < prompt.size(); ++i) lg = logits({prompt[i]}, static_cast<int64_t>(i));
    }
    const auto t1 = clock::now();
    r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
    std::vector<int64_t> seq = prompt;
    const int64_t limit = use_kv_cache_ ? max_context_len_ : max_seq_len_;
    for (;;) {
      const int64_t t = sample(lg, opt, rng);
      r.tokens.push_back(t);
      seq.push_back(t);
      if (opt.on_token) opt.on_token(t);
      if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
        r.stop_reason = "stop_token";
        break;
      }
      if (opt.max_new_tokens > 0 && static_cast<int64_t>(r.tokens.size()) >= opt.max_new_tokens)
        break;
      if (static_cast<int64_t>(seq.size()) >= limit) {
        r.stop_reason = "context_full";
        break;
      }
      lg = use_kv_cache_ ? logits({t}, static_cast<int64_t>(seq.size()) - 1) : logits(seq, 0);
    }
    r.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    return r;
  }

 private:
  static float bf16_to_float(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static float f16_to_float(uint16_t h) {  // IEEE binary16, exact
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
      u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
      u = sign | ((exp + 112u) << 23) | (man << 13);
    } else {
      const float f = std::ldexp(static_cast<float>(man), -24);
      return (h & 0x8000u) ? -f : f;
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

  void check_prompt(const std::vector<int64_t>& prompt) const {
    if (prompt.empty())
      throw Error(PTERON_ERROR_INVALID_ARGUMENT, "the prompt is empty: give at least one token");
    for (int64_t t : prompt)
      if (vocab_size_ >= 0 && (t < 0 || t >= vocab_size_))
        throw Error(PTERON_ERROR_INVALID_ARGUMENT,
                    "token id " + std::to_string(t) + " is outside the vocabulary of " +
                        std::to_string(vocab_size_) + " (get_vocab_size)");
    if (static_cast<int64_t>(prompt.size()) > max_prompt_tokens())
      throw Error(PTERON_ERROR_INVALID_ARGUMENT,
                  "the prompt has " + std::to_string(prompt.size()) +
                      " tokens; this program takes at most " +
                      std::to_string(max_prompt_tokens()) + " (get_max_seq_len " +
                      std::to_string(max_seq_len_) + ", get_max_context_len " +
                      std::to_string(max_context_len_) + ")");
  }

  static int64_t sample(const std::vector<float>& lg, const Options& opt, std::mt19937_64& rng) {
    if (opt.temperature <= 0.0f)
      return static_cast<int64_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    const double mx = *std::max_element(lg.begin(), lg.end());
    std::vector<double> p(lg.size());
    double sum = 0.0;
    for (size_t i = 0; i < lg.size(); ++i) sum += p[i] = std::exp((lg[i] - mx) / opt.temperature);
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    size_t keep = order.size();
    double cum = 0.0, kept = 0.0;
    for (size_t i = 0; i < order.size(); ++i) {
      cum += p[order[i]] / sum;
      if (cum >= opt.top_p) {
        keep = i + 1;
        break;
      }
    }
    for (size_t i = 0; i < keep; ++i) kept += p[order[i]];
    double u = std::uniform_real_distribution<double>(0.0, kept)(rng);
    for (size_t i = 0; i < keep; ++i) {
      u -= p[order[i]];
      if (u < 0.0) return static_cast<int64_t>(order[i]);
    }
    return static_cast<int64_t>(order[keep - 1]);
  }

  Method forward_;
  bool use_kv_cache_ = true, dynamic_ = true, has_bos_ = false;
  int64_t max_seq_len_ = 128, max_context_len_ = 128, vocab_size_ = -1, bos_id_ = 0;
  int64_t per_call_ = 1;
  std::vector<int64_t> eos_ids_;
};

}  // namespace llm
}  // namespace pteron
