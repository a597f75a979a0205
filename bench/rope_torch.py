#!/usr/bin/python3
"""PyTorch eager RoPE, for comparison with build/bench/rope_bench.

Same shapes as rope_bench (q and k both [batch, heads, seq, head_dim],
float32, contiguous, positions 0..seq-1, full rotary) and the same GB/s
convention (bytes of q and k read and written once: 2 x size for forward and
backward, 1e9 bytes per GB). Two formulations:

  hf       Hugging Face Llama: q * cos + rotate_half(q) * sin, with
           rotate_half(x) = cat(-x2, x1) and cos/sin tables of width head_dim
           (split-half layout).
  complex  Meta's reference Llama: view pairs as complex numbers and multiply
           by freqs_cis = exp(i * theta) (interleaved layout).

Backward is torch.autograd.grad of both outputs with respect to q and k
(fresh gradients, comparable to rope_bench's "backward, in place" bytes).

Run with Debian's torch (python3-torch is installed for /usr/bin/python3,
not for a pyenv python3):
  /usr/bin/python3 bench/rope_torch.py [--quick]
"""
import sys
import time

try:
    import torch
except ImportError:
    print("rope_torch.py: skipped, PyTorch is not installed for this Python "
          f"({sys.executable}); install Debian's python3-torch and run "
          "/usr/bin/python3 bench/rope_torch.py")
    sys.exit(0)

SHAPES = [(8, 8, 1024, 64), (1, 32, 4096, 128)]
BASE = 10000.0


def best_seconds(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def hf_tables(seq, dim):
    inv_freq = 1.0 / (BASE ** (torch.arange(0, dim, 2, dtype=torch.int64)
                               .float() / dim))
    freqs = torch.outer(torch.arange(seq).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()  # [seq, dim]


def hf_rope(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def complex_table(seq, dim):
    inv_freq = 1.0 / (BASE ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(seq).float(), inv_freq)
    return torch.polar(torch.ones_like(freqs), freqs)  # [seq, dim/2]


def complex_rope(q, k, freqs_cis):
    def one(x):
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs_cis).flatten(3)
    return one(q), one(k)


def main():
    repeats = 3 if "--quick" in sys.argv else 10
    print(f"PyTorch {torch.__version__} eager RoPE, fused q+k call")
    for batch, heads, seq, dim in SHAPES:
        size = 2 * batch * heads * seq * dim * 4  # bytes of q and k
        for threads in (1, 2):
            torch.set_num_threads(threads)
            print(f"[{batch}, {heads}, {seq}, {dim}] q and k, "
                  f"{threads} thread{'s' if threads > 1 else ''}")
            q = torch.randn(batch, heads, seq, dim, requires_grad=True)
            k = torch.randn(batch, heads, seq, dim, requires_grad=True)
            dq, dk = torch.randn_like(q), torch.randn_like(k)
            cos, sin = hf_tables(seq, dim)
            freqs_cis = complex_table(seq, dim)
            for name, rope in (
                    ("hf rotate_half", lambda: hf_rope(q, k, cos, sin)),
                    ("complex multiply", lambda: complex_rope(q, k, freqs_cis))):
                with torch.no_grad():
                    forward = best_seconds(rope, repeats)
                outputs = rope()
                backward = best_seconds(
                    lambda: torch.autograd.grad(outputs, (q, k), (dq, dk),
                                                retain_graph=True), repeats)
                for what, seconds in (("forward", forward),
                                      ("backward", backward)):
                    print(f"  {name + ' ' + what:34s} {seconds * 1e3:8.2f} ms "
                          f"{2 * size / seconds / 1e9:8.2f} GB/s")


if __name__ == "__main__":
    main()
