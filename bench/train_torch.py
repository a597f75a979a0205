#!/usr/bin/python3
"""The model of build/bench/train_bench in PyTorch eager, for comparison:
a Llama-style decoder (RMSNorm, RoPE with rotate_half, grouped-query
attention via repeat_kv, causal softmax attention as batched matmuls, SwiGLU,
tied embeddings) trained with torch.optim.AdamW. The same work per step as
rotor: forward, cross-entropy, backward, clip_grad_norm_, AdamW step on
random token batches, same shapes, same initialisation scheme. Configs
tiny, small and smol (SmolLM2-135M's shape at seq 2,048, batch 1, as
bench/long_context_torch.py's); the smol pairs take most of the time.

Each (config, threads) pair runs in its own process (torch.set_num_threads
and peak RSS are per process). tokens/s is batch * seq per step, from the
fastest of R groups of N steps after two warm-up steps; tok/CPU-s divides by
the process's CPU time instead (less sensitive to other jobs on a shared
machine); peak RSS is VmHWM.

Precision fp32 is eager float32; bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed precision:
float32 master weights, bf16 matmul operands (oneDNN), as rotor's
train.precision: bf16 (train_bench --precision bf16).

Usage: /usr/bin/python3 bench/train_torch.py [--steps N] [--repeats R]
           [--precision fp32|bf16|both] [--configs tiny,small,smol]
Exits cleanly when torch is not installed.
"""
import math
import os
import resource
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint
except ImportError:
    print("torch not installed; skipping the PyTorch comparison")
    sys.exit(0)

VOCAB = 256
# SmolLM2-135M's shape beyond hidden, layers, heads and ffn (bench_util.h
# SmolLm2Shape): Model's keyword arguments.
SMOLLM2 = dict(std=0.041666666666666664, vocab=49152, kv_heads=3, head_dim=64,
               theta=100000.0)
CONFIGS = {
    # hidden, layers, heads, ffn, seq, batch, Model's other arguments
    "tiny": (128, 4, 4, 344, 256, 8, {}),
    "small": (256, 6, 8, 688, 512, 8, {}),
    "smol": (576, 30, 9, 1536, 2048, 1, SMOLLM2),
}


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
                               self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, groups):
    if groups == 1:
        return x
    b, h, t, d = x.shape
    return x[:, :, None].expand(b, h, groups, t, d).reshape(b, h * groups, t, d)


class Attention(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, std, out_std):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = d = head_dim
        self.q_proj = torch.nn.Linear(hidden, heads * d, bias=False)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * d, bias=False)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * d, bias=False)
        self.o_proj = torch.nn.Linear(heads * d, hidden, bias=False)
        for layer in (self.q_proj, self.k_proj, self.v_proj):
            torch.nn.init.normal_(layer.weight, std=std)
        torch.nn.init.normal_(self.o_proj.weight, std=out_std)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        d = self.head_dim
        q = self.q_proj(x).view(b, t, self.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        scores = scores + mask
        probs = torch.softmax(scores.float(), dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class Mlp(torch.nn.Module):
    def __init__(self, hidden, ffn, std, out_std):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden, ffn, bias=False)
        self.up_proj = torch.nn.Linear(hidden, ffn, bias=False)
        self.down_proj = torch.nn.Linear(ffn, hidden, bias=False)
        torch.nn.init.normal_(self.gate_proj.weight, std=std)
        torch.nn.init.normal_(self.up_proj.weight, std=std)
        torch.nn.init.normal_(self.down_proj.weight, std=out_std)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, ffn, std, out_std):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.self_attn = Attention(hidden, heads, kv_heads, head_dim, std,
                                   out_std)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.mlp = Mlp(hidden, ffn, std, out_std)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Model(torch.nn.Module):
    """The decoder; the defaults are train_bench's (vocab 256, no
    grouped-query sharing, head_dim hidden / heads, theta 10000).
    checkpoint_layers recomputes every layer in backward
    (torch.utils.checkpoint), as rotor's train.activation_checkpointing:
    layers."""

    def __init__(self, hidden, layers, heads, ffn, seq, std=0.02,
                 vocab=VOCAB, kv_heads=None, head_dim=None, theta=10000.0,
                 checkpoint_layers=False):
        super().__init__()
        self.vocab = vocab
        self.checkpoint_layers = checkpoint_layers
        kv_heads = kv_heads or heads
        d = head_dim or hidden // heads
        out_std = std / math.sqrt(2 * layers)
        self.embed_tokens = torch.nn.Embedding(vocab, hidden)
        torch.nn.init.normal_(self.embed_tokens.weight, std=std)
        self.layers = torch.nn.ModuleList(
            Layer(hidden, heads, kv_heads, d, ffn, std, out_std)
            for _ in range(layers))
        self.norm = RMSNorm(hidden)
        inv_freq = 1.0 / (theta**(torch.arange(0, d, 2).float() / d))
        angles = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer(
            "mask", torch.full((seq, seq), float("-inf")).triu(1),
            persistent=False)

    def forward(self, ids, targets):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            if self.checkpoint_layers:
                h = torch.utils.checkpoint.checkpoint(
                    layer, h, self.cos, self.sin, self.mask,
                    use_reentrant=False)
            else:
                h = layer(h, self.cos, self.sin, self.mask)
        logits = F.linear(self.norm(h), self.embed_tokens.weight)  # tied
        return F.cross_entropy(logits.view(-1, self.vocab), targets.view(-1))


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def make_optimizer(model, lr):
    """AdamW as rotor's: weight decay 0.1 on weight matrices other than the
    embeddings, none on norms."""
    decay = [p for n, p in model.named_parameters()
             if p.dim() >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters()
                if not (p.dim() >= 2 and "embed" not in n)]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8)


def run_one(name, threads, steps, repeats, precision):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    hidden, layers, heads, ffn, seq, batch, shape = CONFIGS[name]
    model = Model(hidden, layers, heads, ffn, seq, **shape)
    optimizer = make_optimizer(model, lr=1e-3)

    def step():
        ids = torch.randint(0, model.vocab, (batch, seq))
        targets = torch.randint(0, model.vocab, (batch, seq))
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=precision == "bf16"):
            loss = model(ids, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    step()
    step()
    best, worst = float("inf"), 0.0
    cpu_start = cpu_seconds()
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        seconds = (time.perf_counter() - start) / steps
        best, worst = min(best, seconds), max(worst, seconds)
    tokens = batch * seq
    cpu_per_step = (cpu_seconds() - cpu_start) / (steps * repeats)
    params = sum(p.numel() for p in model.parameters())
    print(f"{name} {precision} {threads} {tokens / best:.0f} "
          f"{tokens / worst:.0f} {tokens / cpu_per_step:.0f} "
          f"{peak_rss_mib():.1f} {params}")


def main():
    args = sys.argv[1:]
    options = dict(zip(args[::2], args[1::2]))
    steps = int(options.get("--steps", 3))
    repeats = int(options.get("--repeats", 3))
    precision = options.get("--precision", "both")
    if precision not in ("fp32", "bf16", "both"):
        sys.exit("train_torch.py: --precision must be fp32, bf16 or both")
    precisions = ("fp32", "bf16") if precision == "both" else (precision,)
    names = options.get("--configs", ",".join(CONFIGS)).split(",")
    for name in names:
        if name not in CONFIGS:
            sys.exit(f"train_torch.py: no config {name!r} (have: "
                     f"{', '.join(CONFIGS)})")
    if "--config" in options:
        for prec in precisions:
            run_one(options["--config"], int(options["--threads"]), steps,
                    repeats, prec)
        return
    print(f"PyTorch {torch.__version__} eager training step (forward + "
          f"backward + clip + AdamW), vocab {VOCAB} "
          f"(smol: {SMOLLM2['vocab']})")
    print(f"{'config':6s} {'prec':4s} {'threads':>7s} {'tok/s':>10s} "
          f"{'(slowest)':>10s} {'tok/CPU-s':>12s} {'peak RSS MiB':>13s} {'params':>8s}")
    for name, prec, threads in ((n, p, t) for n in names
                                for p in precisions for t in (1, 2)):
        # torch.set_num_threads sizes only PyTorch's own (OpenMP) pool;
        # Debian's torch also calls OpenBLAS, whose threads are sized by
        # the environment. Pin both so "threads" means the same for both
        # frameworks (rotor runs OpenBLAS single-threaded on its pool).
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads))
        result = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--config", name,
             "--threads", str(threads), "--steps", str(steps),
             "--repeats", str(repeats), "--precision", prec],
            check=True, capture_output=True, text=True, env=env)
        fields = result.stdout.split()
        print(f"{fields[0]:6s} {fields[1]:4s} {int(fields[2]):7d} "
              f"{float(fields[3]):10.0f} {float(fields[4]):10.0f} "
              f"{float(fields[5]):12.0f} {float(fields[6]):13.1f} "
              f"{int(fields[7]):8d}", flush=True)


if __name__ == "__main__":
    main()
