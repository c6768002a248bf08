// SPDX-License-Identifier: BSD-3-Clause
// llm_generate - pteron/llm.hpp as an application uses it (tests/test_llm_generate.py):
//   llm_generate MODEL.pte MAX_NEW ID...   greedy generation after the prompt ids: prints
//                                          "tokens: ..." and "stop: <reason>", or "error: <code>
//                                          <message>" for a pteron::Error
//   llm_generate MODEL.pte --metadata      prints the metadata the generator read
//   llm_generate MODEL.pte --sample SEED   two sampled runs (temperature 0.9, top_p 0.95) with
//                                          one seed: prints "same" or "differ"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pteron/llm.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: llm_generate MODEL.pte (MAX_NEW ID... | --metadata | --sample SEED)\n");
    return 2;
  }
  try {
    pteron::Program prog = pteron::Program::load_file(argv[1]);
    pteron::llm::Generator gen(prog);
    if (std::strcmp(argv[2], "--metadata") == 0) {
      std::printf("max_seq_len %lld max_context_len %lld vocab %lld kv %d bos %lld eos",
                  (long long)gen.max_seq_len(), (long long)gen.max_context_len(),
                  (long long)gen.vocab_size(), gen.use_kv_cache() ? 1 : 0,
                  (long long)gen.bos_id());
      for (int64_t e : gen.eos_ids()) std::printf(" %lld", (long long)e);
      std::printf(" max_prompt %lld\n", (long long)gen.max_prompt_tokens());
      return 0;
    }
    if (std::strcmp(argv[2], "--sample") == 0) {
      pteron::llm::Options o;
      o.max_new_tokens = 12;
      o.temperature = 0.9f;
      o.top_p = 0.95f;
      o.seed = std::strtoull(argv[3], nullptr, 10);
      const auto a = gen.generate({1, 7}, o).tokens, b = gen.generate({1, 7}, o).tokens;
      std::printf("%s\n", a == b ? "same" : "differ");
      return 0;
    }
    pteron::llm::Options o;
    o.max_new_tokens = std::atoll(argv[2]);
    std::vector<int64_t> prompt;
    for (int i = 3; i < argc; ++i) prompt.push_back(std::atoll(argv[i]));
    std::vector<int64_t> streamed;
    o.on_token = [&](int64_t t) { streamed.push_back(t); };
    pteron::llm::Result r = gen.generate(prompt, o);
    if (streamed != r.tokens) {
      std::printf("streamed tokens differ from the result\n");
      return 1;
    }
    std::printf("tokens:");
    for (int64_t t : r.tokens) std::printf(" %lld", (long long)t);
    std::printf("\nstop: %s\n", r.stop_reason.c_str());
  } catch (const pteron::Error& e) {
    std::printf("error: %d %s\n", e.code(), e.what());
  }
  return 0;
}
