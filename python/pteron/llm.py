# SPDX-License-Identifier: BSD-3-Clause
"""Text generation with programs made by upstream ExecuTorch's LLM exporter (export_llama and
the programs shaped like its output).

    import pteron.llm
    gen = pteron.llm.Generator("model.pte")
    tok = pteron.llm.load_tokenizer("tokenizer.json")       # optional: token ids work too
    result = gen.generate(gen.encode_prompt(tok, "Once upon a time"), max_new_tokens=32,
                          on_token=lambda t: print(tok.decode([t]), end=""))
    print(result.tokens, result.decode_tokens_per_second)

The program (what upstream's exporter writes, read here, not assumed):
  - method ``forward``: token ids int64 [1, S] and, with a KV cache (``use_kv_cache``), the
    start position int64 [1]; it returns the logits float32 [1, vocabulary] of the last
    position (or [1, S, vocabulary] of every position when exported with
    ``--generate_full_logits``: the last row is used).
  - metadata methods, each taking nothing and returning one value: ``get_max_seq_len`` (the
    most tokens one forward call takes; a prompt may be 1 fewer), ``get_max_context_len``
    (positions in the KV cache), ``get_vocab_size``, ``use_kv_cache``,
    ``enable_dynamic_shape`` (a whole prompt in one call; else one token per call),
    ``get_bos_id``, ``get_eos_ids`` (or ``get_eos_id``), ``get_n_layers``,
    ``use_sdpa_with_kv_cache`` and whatever else the exporter's ``--metadata`` added.
    Missing ones take upstream's runner's defaults: max lengths 128, no BOS/EOS, KV cache on
    if forward takes two inputs, dynamic shape on if its token input has a bound.

The loop: prefill the prompt (one call, or one per token without dynamic shape), then decode
one token per call, feeding the last sampled token at the next position. Sampling is greedy
(argmax; the lowest id among equal maxima, as torch.argmax) unless a temperature > 0 is given:
then softmax(logits / temperature), restricted to the smallest set of most likely tokens whose
probability reaches top_p, sampled with numpy's Generator(seed). Generation ends at a stop
token (the program's EOS ids, or those given), after max_new_tokens, or at the context's end.

Errors: an empty prompt, a prompt longer than the program takes (get_max_seq_len - 1 tokens
in one call, or the context's length), or a token id outside the vocabulary raise
pteron.InvalidArgumentError (a ValueError) naming the limit; a program without a ``forward``
of this shape raises pteron.InvalidProgramError naming what it has.
"""
from __future__ import annotations

import math
import operator
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

__all__ = ["Generator", "GenerationResult", "Sampler", "load_tokenizer"]

# The metadata methods upstream's exporter writes (export_llama_lib's _load_llama_model_metadata
# and its --metadata option), read when the program has them.
_METADATA = ("get_max_seq_len", "get_max_context_len", "get_vocab_size", "use_kv_cache",
             "enable_dynamic_shape", "get_bos_id", "get_eos_ids", "get_eos_id", "get_n_layers",
             "use_sdpa_with_kv_cache", "get_n_bos", "get_n_eos", "append_eos_to_prompt")


@dataclass
class GenerationResult:
    """What Generator.generate returns. Times are seconds of wall-clock time."""
    prompt: List[int]
    tokens: List[int]  # the generated tokens (a stop token included when one ended it)
    stop_reason: str  # "stop_token", "max_new_tokens" or "context_full"
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    logits: List[np.ndarray] = field(default_factory=list)  # per step, with keep_logits

    @property
    def prefill_tokens_per_second(self) -> float:
        return len(self.prompt) / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Tokens from the decode calls (the first generated token comes from the prefill)."""
        n = max(0, len(self.tokens) - 1)
        return n / self.decode_seconds if self.decode_seconds > 0 else 0.0


class Sampler:
    """Chooses the next token from a logits vector: greedy when temperature <= 0, else
    temperature and top-p (nucleus) sampling with numpy's Generator(seed)."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0,
                 seed: Optional[int] = None):
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p {top_p}: give a probability in (0, 1]")
        if not math.isfinite(temperature):
            raise ValueError(f"temperature {temperature}: give a finite number (0 or less: "
                             "greedy)")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed {seed!r}: give a non-negative integer")
        self.temperature, self.top_p = float(temperature), float(top_p)
        self._rng = np.random.default_rng(seed)

    def __call__(self, logits: np.ndarray) -> int:
        x = np.asarray(logits, dtype=np.float64).reshape(-1)
        if self.temperature <= 0.0:
            return int(np.argmax(x))
        x = (x - np.max(x)) / self.temperature
        p = np.exp(x)
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        if self.top_p < 1.0:
            cum = np.cumsum(p[order])
            keep = int(np.searchsorted(cum, self.top_p) + 1)  # reaches top_p, at least one
            order = order[:keep]
        q = p[order] / p[order].sum()
        return int(order[self._rng.choice(len(order), p=q)])


class Generator:
    """A loaded LLM program and its generation loop (see the module's documentation).

    ``program``: a path, bytes, or a pteron.Program. The metadata it has is in
    ``self.metadata`` (name -> value)."""

    def __init__(self, program, *, method: str = "forward"):
        from . import _runtime
        self._rt = _runtime
        if not isinstance(program, _runtime.Program):
            program = _runtime.Program.load(program)
        self.program = program
        names = program.method_names
        if method not in names:
            raise _runtime.InvalidProgramError(
                f"the program has no method {method!r} (it has {', '.join(names)})")
        self.metadata: Dict[str, object] = {}
        for name in _METADATA:
            if name in names:
                out = program.load_method(name)()
                self.metadata[name] = _scalar_or_list(out)
        self.forward = program.load_method(method)
        ins = self.forward.inputs
        i64 = np.dtype(np.int64)
        if (not 1 <= len(ins) <= 2 or any(s.kind != "tensor" or s.dtype != i64 for s in ins)
                or len(ins[0].shape) != 2 or (len(ins) == 2 and len(ins[1].shape) != 1)):
            raise _runtime.InvalidProgramError(
                f"method {method!r} takes {self.forward!r}: an LLM program's forward takes "
                "token ids int64 [1, S] and, with a KV cache, the start position int64 [1]")
        self.use_kv_cache = bool(self.metadata.get("use_kv_cache", len(ins) == 2))
        if self.use_kv_cache and len(ins) != 2:
            raise _runtime.InvalidProgramError(
                f"use_kv_cache is true but {method!r} takes one input: {self.forward!r}")
        self.dynamic = bool(self.metadata.get("enable_dynamic_shape",
                                              ins[0].dynamism != "static"))
        self.max_seq_len = int(self.metadata.get("get_max_seq_len", 128))
        self.max_context_len = int(self.metadata.get("get_max_context_len", self.max_seq_len))
        self.vocab_size = int(self.metadata["get_vocab_size"]) \
            if "get_vocab_size" in self.metadata else None
        self.bos_id = self.metadata.get("get_bos_id")
        eos = self.metadata.get("get_eos_ids", self.metadata.get("get_eos_id"))
        self.eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        # A dynamic token input takes up to its bound (upstream's exporter: max_seq_len - 1).
        b = ins[0].bounds[1] if ins[0].dynamism != "static" else ins[0].shape[1]
        self.max_prompt_per_call = int(b) if self.dynamic else 1

    # ---- one step ------------------------------------------------------------------------
    def logits(self, tokens: Sequence[int], start_pos: int) -> np.ndarray:
        """The logits (float32 [vocabulary]) after `tokens` placed at positions start_pos...:
        one forward call (the program's KV cache keeps what earlier calls wrote)."""
        t = np.asarray(_token_ids(tokens), dtype=np.int64).reshape(1, -1)
        if self.use_kv_cache and not 0 <= start_pos <= self.max_context_len - t.shape[1]:
            raise self._rt.InvalidArgumentError(
                f"start position {start_pos} with {t.shape[1]} token(s) does not fit the "
                f"program's {self.max_context_len} positions (get_max_context_len)")
        if self.use_kv_cache:
            out = self.forward(t, np.array([start_pos], dtype=np.int64))
        else:
            out = self.forward(t)
        x = np.asarray(out[0], dtype=np.float32)
        return x.reshape(-1, x.shape[-1])[-1]

    def _check_prompt(self, prompt: List[int]) -> None:
        err = self._rt.InvalidArgumentError
        if not prompt:
            raise err("the prompt is empty: give at least one token")
        if self.vocab_size is not None:
            bad = [t for t in prompt if not 0 <= t < self.vocab_size]
            if bad:
                raise err(f"token id {bad[0]} is outside the vocabulary of {self.vocab_size} "
                          "(get_vocab_size)")
        limit = self.max_context_len - 1 if self.use_kv_cache else self.max_seq_len - 1
        if self.use_kv_cache and self.dynamic:
            limit = min(limit, self.max_prompt_per_call)
        if len(prompt) > limit:
            raise err(f"the prompt has {len(prompt)} tokens; this program takes at most {limit} "
                      f"(get_max_seq_len {self.max_seq_len}, get_max_context_len "
                      f"{self.max_context_len})")

    # ---- the loop ------------------------------------------------------------------------
    def generate(self, prompt: Sequence[int], max_new_tokens: Optional[int] = None, *,
                 temperature: float = 0.0, top_p: float = 1.0, seed: Optional[int] = None,
                 stop_tokens: Optional[Iterable[int]] = None,
                 on_token: Optional[Callable[[int], None]] = None,
                 keep_logits: bool = False) -> GenerationResult:
        """Generates after `prompt` (token ids; give the BOS id yourself, or use
        encode_prompt). max_new_tokens: None = until a stop token or the context's end.
        stop_tokens: None = the program's EOS ids. on_token(id) is called for each new token
        as it is chosen (streaming). keep_logits: keep each step's logits in the result."""
        prompt = _token_ids(prompt)
        self._check_prompt(prompt)
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or
                                           not isinstance(max_new_tokens, int) or
                                           max_new_tokens < 0):
            raise self._rt.InvalidArgumentError(
                f"max_new_tokens {max_new_tokens!r}: give an integer >= 0 (or None: no limit)")
        stops = self.eos_ids if stop_tokens is None else {int(t) for t in stop_tokens}
        sampler = Sampler(temperature, top_p, seed)
        res = GenerationResult(prompt=prompt, tokens=[], stop_reason="max_new_tokens")
        if max_new_tokens == 0:
            return res
        # prefill
        t0 = time.perf_counter()
        if not self.use_kv_cache:
            logits = self.logits(prompt, 0)
        elif self.dynamic:
            logits = self.logits(prompt, 0)
        else:
            for i, tok in enumerate(prompt):
                logits = self.logits([tok], i)
        res.prefill_seconds = time.perf_counter() - t0
        seq = list(prompt)
        t1 = time.perf_counter()
        while True:
            if keep_logits:
                res.logits.append(logits.copy())
            tok = sampler(logits)
            res.tokens.append(tok)
            seq.append(tok)
            if on_token is not None:
                on_token(tok)
            if tok in stops:
                res.stop_reason = "stop_token"
                break
            if max_new_tokens is not None and len(res.tokens) >= max_new_tokens:
                break
            limit = self.max_context_len if self.use_kv_cache else self.max_seq_len
            if len(seq) >= limit:
                res.stop_reason = "context_full"
                break
            if self.use_kv_cache:
                logits = self.logits([tok], len(seq) - 1)
            else:
                logits = self.logits(seq, 0)
        res.decode_seconds = time.perf_counter() - t1
        return res

    def encode_prompt(self, tokenizer, text: str, *, bos: bool = True) -> List[int]:
        """The tokenizer's ids of `text`, after the program's BOS id (get_bos_id) when bos."""
        ids = list(tokenizer.encode(text))
        if bos and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids = [int(self.bos_id)] + ids
        return ids


def _token_ids(tokens) -> List[int]:
    """Token ids as Python ints; a float or anything else that is not an integer is a
    TypeError naming it (no silent truncation)."""
    try:
        return [operator.index(t) for t in tokens]
    except TypeError:
        bad = next(t for t in tokens if not hasattr(t, "__index__"))
        raise TypeError(f"token id {bad!r} is not an integer") from None


def _scalar_or_list(out):
    if len(out) == 1:
        v = out[0]
        if isinstance(v, np.ndarray):
            return v.reshape(-1).tolist() if v.size != 1 else v.reshape(-1)[0].item()
        return v
    return [v.item() if isinstance(v, np.ndarray) and v.size == 1 else v for v in out]


# ---- tokenizers: the packages Python users already have (optional dependencies) ----------

class _HF:
    """A Hugging Face `tokenizers` tokenizer.json."""

    def __init__(self, path: Path):
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise ImportError(f"{path} is a Hugging Face tokenizer: pip install tokenizers") from e
        try:
            self._t = Tokenizer.from_file(str(path))
        except Exception as e:  # noqa: BLE001  (tokenizers raises a bare Exception)
            raise ValueError(f"{path}: not a readable tokenizer.json ({e})") from None

    def encode(self, text: str) -> List[int]:
        return self._t.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self._t.decode(list(ids), skip_special_tokens=False)


class _SentencePiece:
    def __init__(self, path: Path):
        import sentencepiece
        try:
            self._t = sentencepiece.SentencePieceProcessor(model_file=str(path))
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"{path}: not a readable SentencePiece model ({e})") from None

    def encode(self, text: str) -> List[int]:
        return list(self._t.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self._t.decode(list(ids))


# Llama 3's pre-tokenizer pattern (its tokenizer.model is a tiktoken BPE file).
_LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                   r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


class _Tiktoken:
    """A tiktoken BPE file (lines of base64 token and rank), as Llama 3 ships tokenizer.model,
    with Llama 3's pattern and its 256 special tokens after the ranks."""

    def __init__(self, path: Path):
        try:
            import tiktoken
            from tiktoken.load import load_tiktoken_bpe
        except ImportError as e:
            raise ImportError(f"{path} is a tiktoken BPE file: pip install tiktoken") from e
        try:
            ranks = load_tiktoken_bpe(str(path))
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"{path}: not a readable tiktoken BPE file ({e})") from None
        n = len(ranks)
        names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                 "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                 "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
                 "<|eot_id|>", "<|python_tag|>"]
        names += [f"<|reserved_special_token_{i}|>" for i in range(2, 256 - len(names) + 2)]
        special = {s: n + i for i, s in enumerate(names[:256])}
        self._t = tiktoken.Encoding(name=path.name, pat_str=_LLAMA3_PATTERN,
                                    mergeable_ranks=ranks, special_tokens=special)

    def encode(self, text: str) -> List[int]:
        return self._t.encode(text, disallowed_special=())

    def decode(self, ids: Sequence[int]) -> str:
        return self._t.decode(list(ids))


def load_tokenizer(path: Union[str, Path]):
    """A tokenizer with encode(text) -> ids and decode(ids) -> text, by the file's kind:
    tokenizer.json (Hugging Face `tokenizers`), a SentencePiece model (`sentencepiece`), or a
    tiktoken BPE file such as Llama 3's tokenizer.model (`tiktoken`). Each package is an
    optional dependency, needed only for its kind of file."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"tokenizer file {p} not found")
    head = p.read_bytes()[:4096]
    if p.suffix == ".json" or head.lstrip()[:1] == b"{":
        return _HF(p)
    first = head.split(b"\n", 1)[0].split()
    if len(first) == 2 and first[1].isdigit():
        return _Tiktoken(p)
    # A SentencePiece model is a protobuf message whose first field (the pieces) starts with
    # the tag byte 0x0A.
    if head[:1] != b"\n":
        raise ValueError(f"{p}: not a tokenizer file (a tokenizer.json, a SentencePiece model or "
                         "a tiktoken BPE file)")
    try:
        return _SentencePiece(p)
    except ImportError as e:
        raise ImportError(f"{p} looks like a SentencePiece model: pip install sentencepiece") \
            from e
