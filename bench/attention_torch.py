#!/usr/bin/python3
"""Causal attention the PyTorch-eager way, for comparison with
build/bench/attention_bench: scores as a batched matmul, a mask, a softmax
and a second matmul, every [T, T] intermediate materialised (and kept by
autograd for backward). Same shapes, same FLOP accounting (algorithmic, over
the causal pairs: forward 4 D P, backward 8 D P). Note that this eager
version also computes the masked half of the scores, so it executes about
twice the counted FLOPs.

Usage: /usr/bin/python3 bench/attention_torch.py [max_len]   (default 1024)
Exits cleanly when torch is not installed.
"""
import sys
import time

try:
    import torch
except ImportError:
    print("torch not installed; skipping the PyTorch comparison")
    sys.exit(0)


def eager_attention(q, k, v, scale):
    group = q.shape[1] // k.shape[1]
    if group > 1:  # grouped-query attention: repeat each kv head
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    t = q.shape[2]
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    s = (q @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def best_seconds(fn, repeats=3):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    max_len = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    torch.manual_seed(1)
    print(f"PyTorch {torch.__version__} eager attention (matmul + mask + "
          f"softmax + matmul)")
    print(f"{'shape (causal)':28s} {'threads':>7s} {'fwd ms':>10s} "
          f"{'GFLOP/s':>8s} {'fwd+bwd ms':>12s} {'GFLOP/s':>8s} "
          f"{'one [T,T] MiB':>14s}")
    for t in (256, 512, 1024, 2048, 4096):
        if t > max_len:
            break
        for d in (32, 64):
            for hkv in (8, 4):
                b, hq = 8, 8
                q = torch.rand(b, hq, t, d) * 2 - 1
                k = torch.rand(b, hkv, t, d) * 2 - 1
                v = torch.rand(b, hkv, t, d) * 2 - 1
                dout = torch.rand(b, hq, t, d) * 2 - 1
                scale = d ** -0.5
                pairs = b * hq * t * (t + 1) / 2
                for threads in (1, 2):
                    torch.set_num_threads(threads)

                    def forward():
                        with torch.no_grad():
                            eager_attention(q, k, v, scale)

                    def forward_backward():
                        qg, kg, vg = (x.detach().requires_grad_()
                                      for x in (q, k, v))
                        eager_attention(qg, kg, vg, scale).backward(dout)

                    fwd = best_seconds(forward)
                    both = best_seconds(forward_backward)
                    name = f"B{b} Hq{hq} Hkv{hkv} T{t} D{d}"
                    tt_mib = b * hq * t * t * 4 / 2**20
                    print(f"{name:28s} {threads:7d} {fwd * 1e3:10.2f} "
                          f"{4 * d * pairs / fwd / 1e9:8.2f} "
                          f"{both * 1e3:12.2f} "
                          f"{12 * d * pairs / both / 1e9:8.2f} "
                          f"{tt_mib:14.0f}")

    # Forward and backward separately, one thread, in process CPU time (as
    # the last table of attention_bench).
    torch.set_num_threads(1)
    print(f"\n{'shape (causal)':28s} {'fwd ms':>10s} {'GFLOP/s':>8s} "
          f"{'bwd ms':>10s} {'GFLOP/s':>8s}   (1 thread, CPU time)")
    for d in (32, 64):
        b, hq, hkv, t = 2, 8, 4, 1024
        q = torch.rand(b, hq, t, d) * 2 - 1
        k = torch.rand(b, hkv, t, d) * 2 - 1
        v = torch.rand(b, hkv, t, d) * 2 - 1
        dout = torch.rand(b, hq, t, d) * 2 - 1
        pairs = b * hq * t * (t + 1) / 2
        fwd = bwd = float("inf")
        for _ in range(4):
            qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, v))
            start = time.process_time()
            out = eager_attention(qg, kg, vg, d ** -0.5)
            middle = time.process_time()
            out.backward(dout)
            end = time.process_time()
            fwd = min(fwd, middle - start)
            bwd = min(bwd, end - middle)
        name = f"B{b} Hq{hq} Hkv{hkv} T{t} D{d}"
        print(f"{name:28s} {fwd * 1e3:10.2f} {4 * d * pairs / fwd / 1e9:8.2f} "
              f"{bwd * 1e3:10.2f} {8 * d * pairs / bwd / 1e9:8.2f}")


if __name__ == "__main__":
    main()
