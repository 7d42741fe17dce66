#!/usr/bin/env python3
"""Peer: PyTorch (CPU) on the workloads of ../../shared/BENCHMARKS.md, with the protocol of
../protocol.mjs. One configuration per process:
    python3 bench/peers/torch_bench.py --workload W --threads N [--json] [--quick]
Prints a table line or one JSON object (impl "torch"). OMP_WAIT_POLICY=PASSIVE is set before torch
loads (without it 2 threads are slower than 1 on this machine kind), and so are OPENBLAS_NUM_THREADS,
OMP_NUM_THREADS and MKL_NUM_THREADS, to --threads (unless already set): torch.set_num_threads does
not reach Debian's OpenBLAS, which otherwise runs its own threads beside them (../../shared/BENCHMARKS.md).
Each timed step also records the process's CPU time over its wall time ("cpu_per_wall", the median
over the timed steps): a run whose median exceeds its thread count (by more than the 2% the kernel's
CPU accounting may add) used more cores than it was given and is marked "comparable": false. W3 also reports the bytes of
the activations autograd saves in one forward (parameters excluded), as BENCHMARKS.md measures.
W5 (bench/README.md) is full fine-tuning of a GPT-2-small-shaped model (f32, AdamW on every
parameter, batch 4 x T 128, random weights), the PyTorch side of fucina's LoRA W5, with 2 warm-up
and 5 timed steps. W8 (w8, w8-ckpt) is the same for a SmolLM2-135M-shaped Llama (30 layers, d 576,
9 heads, 3 kv heads, MLP 1536, vocab 49152, tied; RMSNorm, rotary positions, grouped-query attention,
SiLU-gated MLP, written here as Hugging Face's LlamaForCausalLM computes it), the PyTorch side of
fucina's LoRA w8-q8-ckpt. W6 (w6-b1, w6-b64) is W2's CNN in eval mode under torch.no_grad(), one
forward of 1 or 64 images to the logits read back (images_per_s); W7 generates 128 tokens
greedily after a 64-token prompt with W3's model (tokens_per_s) by the loop a PyTorch user writes:
--generate naive (the default: a full forward over the last `context` tokens per new token, as
Hugging Face's loop without a cache) or kv (keys and values cached while the context has room,
then full forwards over the last `context` tokens, as fucina's generate). Every run records the
BLAS library torch loaded ("blas"), the CPU capability torch's own kernels dispatch to ("isa"),
and "comparable": false (with "not_comparable_why") when that BLAS is Debian's reference BLAS (netlib, no SIMD kernels: torch.mm
at ~6 GFLOP/s), a peer no PyTorch user gets."""
import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _threads_arg(argv):
    """--threads N from the command line before argparse runs (the BLAS reads its env when torch loads)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads_arg(sys.argv[1:]))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

GEMM_SHAPES = {"w4-1024": (1024, 1024, 1024), "w4-fc": (128, 784, 512)}
W6_BATCH = {"w6-b1": 1, "w6-b64": 64}
# W8's model: SmolLM2-135M's config.json fields (bench/protocol.mjs's W8_MODELS.smollm2)
W8_CONFIG = dict(vocab=49152, d=576, layers=30, heads=9, kv_heads=3, inner=1536, eps=1e-5, rope_theta=100000.0)
W7_PROMPT, W7_NEW = 64, 128


def gflop_per_step(w):
    if w == "w1":
        return 6 * 128 * (784 * 512 + 512 * 256 + 256 * 10) / 1e9
    if w == "w2":
        return 3 * 64 * 2 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10) / 1e9
    if w in ("w3", "w3-ckpt"):
        attention = 3 * 2 * 16 * 2 * (2 * 128 * 128 * 128)
        return (6 * 16 * 128 * (445952 - 128 * 128) + attention) / 1e9
    if w.startswith("w5"):  # forward, and a backward of twice its work (weights and inputs)
        d, layers, inner, vocab, tokens = 768, 12, 3072, 50257, 4 * 128
        block_params = layers * (d * 3 * d + d * d + 2 * d * inner)
        forward = 2 * tokens * (block_params + d * vocab) + layers * 4 * 2 * (2 * 128 * 128 * d)
        return 3 * forward / 1e9
    if w.startswith("w8"):  # the same for the Llama shape: q, k, v, o and the gated MLP's three
        c, tokens = W8_CONFIG, 4 * 128
        d, hd = c["d"], c["d"] // c["heads"]
        q, kv = c["heads"] * hd, c["kv_heads"] * hd
        block_params = c["layers"] * (d * (q + 2 * kv) + q * d + 3 * d * c["inner"])
        forward = 2 * tokens * (block_params + d * c["vocab"]) + c["layers"] * 4 * 2 * (2 * 128 * 128 * q)
        return 3 * forward / 1e9
    if w in W6_BATCH:  # one forward
        return W6_BATCH[w] * 2 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 288 + 1600 * 128 + 128 * 10) / 1e9
    if w == "w7":  # nominal: one position per token through the projections and the head (protocol.mjs)
        return 2 * (2 * (128 * 384 + 128 * 128 + 2 * 128 * 512) + 256 * 128) * (W7_PROMPT + W7_NEW - 1) / 1e9
    m, k, n = GEMM_SHAPES[w]
    return 2 * m * n * k / 1e9


def rate(w, median_ms):
    """W6's images/s and W7's tokens/s, as protocol.mjs's record() adds them."""
    if w in W6_BATCH:
        return {"images_per_s": W6_BATCH[w] / (median_ms / 1e3)}
    return {"tokens_per_s": W7_NEW / (median_ms / 1e3)} if w == "w7" else {}


def label_pattern(n, classes):
    """The fixed pseudo-random pattern of protocol.mjs / bench.cpp (xorshift64)."""
    out, s, mask = [], 0x9E3779B97F4A7C15, (1 << 64) - 1
    for _ in range(n):
        s ^= (s << 13) & mask
        s ^= s >> 7
        s ^= (s << 17) & mask
        out.append(s % classes)
    return out


class Block(nn.Module):
    """A pre-LayerNorm block: W3's (exact erf GELU), or GPT-2's (gelu="tanh")."""

    def __init__(self, d=128, heads=4, mlp=512, gelu="none"):
        super().__init__()
        self.heads, self.gelu = heads, gelu
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def forward(self, x, cache=None):
        """cache (W7's kv loop): a dict that gets this block's keys and values appended; the new
        positions' queries attend over all of them, the causal mask aligned to the end."""
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if cache:
                k, v = torch.cat([cache["k"], k], 2), torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        tk = k.shape[2]
        att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
        causal = torch.ones(t, tk, dtype=torch.bool).triu(tk - t + 1)
        att = F.softmax(att.masked_fill(causal, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate=self.gelu))


class Gpt(nn.Module):
    """W3's tiny GPT (the defaults), or W5's GPT-2 small (its sizes, gelu="tanh"): learned
    positions, pre-LayerNorm blocks with a 4x MLP, a final LayerNorm and a tied head."""

    def __init__(self, vocab=256, context=128, d=128, layers=2, heads=4, gelu="none", checkpoint_blocks=False):
        super().__init__()
        self.te, self.pe = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads, 4 * d, gelu) for _ in range(layers))
        self.lnf = nn.LayerNorm(d, eps=1e-5)
        self.checkpoint_blocks = checkpoint_blocks

    def forward(self, idx, caches=None):
        start = caches[0]["k"].shape[2] if caches and caches[0] else 0  # positions already cached
        x = self.te(idx) + self.pe(torch.arange(start, start + idx.shape[1]))
        for i, b in enumerate(self.blocks):
            x = checkpoint(b, x) if self.checkpoint_blocks else b(x, caches[i] if caches else None)
        return self.lnf(x) @ self.te.weight.t()  # tied head


class RmsNorm(nn.Module):
    """Hugging Face's LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """A Llama decoder layer as LlamaForCausalLM computes it (eager attention): RMSNorm, q/k/v with
    rotary positions (rotate_half pairs i and i + hd/2), grouped-query attention (each kv head
    repeated for its heads), o_proj; RMSNorm, down(silu(gate(x)) * up(x)). No biases (llama)."""

    def __init__(self, d, heads, kv_heads, inner, eps):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.input_layernorm, self.post_attention_layernorm = RmsNorm(d, eps), RmsNorm(d, eps)
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, inner, bias=False), nn.Linear(d, inner, bias=False)
        self.down_proj = nn.Linear(inner, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / self.hd ** 0.5)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = F.softmax(att.masked_fill(causal, float("-inf")), dim=-1)
        x = x + self.o_proj((att @ v).transpose(1, 2).reshape(b, t, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    """W8's SmolLM2-135M-shaped LlamaForCausalLM: token embedding, the blocks, a final RMSNorm and
    the head tied to the embedding; weights N(0, 0.02) as Hugging Face initialises them."""

    def __init__(self, vocab, d, layers, heads, kv_heads, inner, eps, rope_theta, checkpoint_blocks=False):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, kv_heads, inner, eps) for _ in range(layers))
        self.norm = RmsNorm(d, eps)
        self.checkpoint_blocks = checkpoint_blocks
        hd = d // heads
        self.inv_freq = 1.0 / rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        t = idx.shape[1]
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed_tokens(idx)
        for block in self.layers:
            x = checkpoint(block, x, cos, sin) if self.checkpoint_blocks else block(x, cos, sin)
        return self.norm(x) @ self.embed_tokens.weight.t()  # tied head


def generate(model, prompt, new_tokens, context, kv):
    """Greedy generation as a PyTorch user writes it (W7): without kv a full forward over the last
    `context` tokens per new token; with kv one position per token from the cached keys and values
    while the context has room, then full forwards over the last `context` tokens (as fucina)."""
    ids, out = list(prompt), []
    caches = [{} for _ in model.blocks] if kv else None
    logits = model(torch.tensor([ids[-context:]]), caches)
    for i in range(new_tokens):
        ids.append(int(logits[0, -1].argmax()))
        out.append(ids[-1])
        if i + 1 == new_tokens:
            break
        if kv and len(ids) <= context:
            logits = model(torch.tensor([ids[-1:]]), caches)
        else:
            logits = model(torch.tensor([ids[-context:]]))
    return out


def loaded_blas():
    """The BLAS shared objects torch mapped (reference BLAS makes its figures not comparable)."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower() and "/" in line}
    return ", ".join(sorted(os.path.realpath(p) for p in libs)) or "none found"


def torch_isa():
    """The CPU capability torch's own kernels use ("AVX2", "AVX512", "DEFAULT"), as torch reports it."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def reference_blas(blas):
    """Whether the loaded BLAS is netlib's reference BLAS (Debian's libblas3: .../blas/libblas.so.3)."""
    return any("/blas/libblas" in lib and "openblas" not in lib for lib in blas.split(", "))


def set_up(w, kv=False):
    torch.manual_seed(1)
    if w in W6_BATCH:  # W2's model in eval mode; the step runs it under no_grad
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
        x = torch.randn(W6_BATCH[w], 1, 28, 28)
        return model, None, lambda: model(x)[0, 0].item(), "NCHW, eval mode, no_grad"
    if w == "w7":
        model = Gpt().eval()
        prompt = label_pattern(W7_PROMPT, 256)
        return model, None, lambda: generate(model, prompt, W7_NEW, 128, kv), (
            "64-token prompt, 128 new tokens, greedy, " + ("KV cache" if kv else "no KV cache (full forward per token)"))
    if w in ("w1", "w2"):
        if w == "w1":
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
            x, batch = torch.randn(128, 784), 128
        else:
            model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
            x, batch = torch.randn(64, 1, 28, 28), 64
        y = torch.tensor(label_pattern(batch, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        return model, opt, lambda: F.cross_entropy(model(x), y), ("NCHW" if w == "w2" else "")
    if w in ("w3", "w3-ckpt"):
        model = Gpt(checkpoint_blocks=w == "w3-ckpt")
        tokens = torch.tensor(label_pattern(16 * 129, 256)).view(16, 129)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        loss = lambda: F.cross_entropy(model(tokens[:, :-1]).reshape(-1, 256), tokens[:, 1:].reshape(-1))  # noqa: E731
        return model, opt, loss, "129 tokens per sequence, 128 predicted"
    if w.startswith("w5"):
        model = Gpt(vocab=50257, context=1024, d=768, layers=12, heads=12, gelu="tanh",
                    checkpoint_blocks=w.endswith("-ckpt"))
        tokens = torch.tensor(label_pattern(4 * 129, 50257)).view(4, 129)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        loss = lambda: F.cross_entropy(model(tokens[:, :-1]).reshape(-1, 50257), tokens[:, 1:].reshape(-1))  # noqa: E731
        return model, opt, loss, "GPT-2 small, full fine-tuning (f32, every parameter)"
    if w.startswith("w8"):
        c = W8_CONFIG
        model = Llama(**c, checkpoint_blocks=w.endswith("-ckpt"))
        tokens = torch.tensor(label_pattern(4 * 129, c["vocab"])).view(4, 129)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        loss = lambda: F.cross_entropy(model(tokens[:, :-1]).reshape(-1, c["vocab"]), tokens[:, 1:].reshape(-1))  # noqa: E731
        return model, opt, loss, "SmolLM2-135M shape, full fine-tuning (f32, every parameter)"
    m, k, n = GEMM_SHAPES[w]
    a, b = torch.randn(m, k), torch.randn(k, n)
    return None, None, lambda: torch.mm(a, b), "torch.mm(a[m,k], b[k,n])"


def saved_activation_bytes(model, loss_of):
    """Bytes autograd saves for backward in one forward, parameters excluded."""
    params = {p.data_ptr() for p in model.parameters()}
    seen, total = set(), [0]

    def pack(t):
        key = (t.data_ptr(), t.numel())
        if t.data_ptr() not in params and key not in seen:
            seen.add(key)
            total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_of()
    return total[0]


def not_comparable_why(blas, cpu_per_wall, threads):
    """Why a run's figures may not enter a ratio, or None: reference BLAS is a peer no PyTorch user
    gets; a run busier than its threads (2% for CPU accounting's granularity) used cores it was not given."""
    if reference_blas(blas):
        return "reference BLAS"
    if cpu_per_wall > threads * 1.02:
        return f"{cpu_per_wall:.2f} CPUs busy on {threads} thread{'s' if threads > 1 else ''}"
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True, choices=["w1", "w2", "w3", "w3-ckpt", "w4-1024", "w4-fc", "w5", "w5-ckpt",
                                                            "w6-b1", "w6-b64", "w7", "w8", "w8-ckpt"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--generate", choices=["naive", "kv"], default="naive")  # W7's loop
    args = p.parse_args()
    inference = args.workload.startswith(("w6", "w7"))
    impl = "torch-kv" if args.workload == "w7" and args.generate == "kv" else "torch"
    load = os.getloadavg()[0]
    torch.set_num_threads(args.threads)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    model, opt, loss_of, note = set_up(args.workload, args.generate == "kv")

    def step():
        if inference:
            with torch.no_grad():
                loss_of()
            return
        if opt is None:
            loss_of()
            return
        opt.zero_grad(set_to_none=True)
        loss = loss_of()
        loss.backward()
        opt.step()
        loss.item()

    cpu_per_wall = []  # the process's CPU time over wall time, per timed step (all its threads)

    def timed():
        c0, t0 = time.process_time(), time.perf_counter()
        step()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        cpu_per_wall.append(cpu / wall)
        return wall * 1e3

    warmup, steps, reduced = (2, 3, False) if args.quick else (10, 50, False)
    timed()
    if timed() > 400 and not args.quick:
        warmup, steps, reduced = 5, 20, True
    if args.workload.startswith(("w5", "w8")) and not args.quick:
        warmup, steps, reduced = 2, 5, True
    for _ in range(warmup - 2):
        step()
    cpu_per_wall.clear()
    ms = sorted(timed() for _ in range(steps))
    busy = sorted(cpu_per_wall)[len(cpu_per_wall) // 2]
    n = len(ms)
    median = ms[n // 2] if n % 2 else (ms[n // 2 - 1] + ms[n // 2]) / 2
    r = {"workload": args.workload, "impl": impl, "threads": args.threads, "median_ms": median,
         "min_ms": ms[0], "max_ms": ms[-1], "gflops_median": gflop_per_step(args.workload) / (median / 1e3),
         "reduced_protocol": reduced, "load_avg_1m": load, "warmup": warmup, "steps": steps,
         "rss_increase_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0,
         "blas": loaded_blas(), "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], "isa": torch_isa(),
         "cpu_per_wall": busy, **rate(args.workload, median)}
    why = not_comparable_why(r["blas"], busy, args.threads)
    r["comparable"] = why is None
    if why:
        r["not_comparable_why"] = why
    if model is not None and args.workload.startswith(("w3", "w5", "w8")):
        r["saved_bytes"] = saved_activation_bytes(model, loss_of)
    if note:
        r["note"] = note
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['workload']:<8} {impl} {r['threads']} thr  median {median:9.3f} ms  (min {ms[0]:.3f}, max {ms[-1]:.3f})"
              f"  {r['gflops_median']:7.2f} GFLOP/s  load {load:.2f}{'  [reduced protocol]' if reduced else ''}  blas {r['blas']}  isa {r['isa']}"
              f"  cpu/wall {busy:.2f}{'' if r['comparable'] else f'  [not comparable: {why}]'}"
              + "".join(f"  {v:.1f} {k[:-6]}/s" for k, v in r.items() if k.endswith("_per_s")))


if __name__ == "__main__":
    sys.exit(main())
