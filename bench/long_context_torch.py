#!/usr/bin/python3
"""The step of build/bench/long_context_bench in PyTorch eager, for
comparison: the SmolLM2-135M shape (hidden 576, 30 layers, 9 query heads
sharing 3 key-value heads of dim 64, FFN 1536, vocabulary 49,152, tied
embeddings, rope_theta 100000) with random weights, batch 1, one step =
forward, cross-entropy, backward, clip_grad_norm_, AdamW, with and without
torch.utils.checkpoint on every layer (rotor's activation_checkpointing:
layers). The model is bench/train_torch.py's.

Each (seq, checkpointing, threads) case runs in its own process; a case
whose eager attention (scores and probabilities, [9, seq, seq] floats each,
kept for every layer, or for one layer at a time when checkpointed) cannot
fit in the machine's memory prints "does not fit" instead of running.
Printed: tokens/s (best of the timed steps after one warm-up) and peak RSS
in GiB (VmHWM).

Usage: /usr/bin/python3 bench/long_context_torch.py [--seqs 2048,8192]
           [--checkpointing none,layers] [--threads 1,2] [--steps N]
Exits cleanly when torch is not installed.
"""
import os
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("torch not installed; skipping the PyTorch comparison")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_torch  # noqa: E402  (the same model as train_bench's)

HIDDEN, LAYERS, HEADS, FFN, _, _, SHAPE = train_torch.CONFIGS["smol"]


def estimated_bytes(seq, checkpointed):
    """A lower bound of the step's memory: weights, gradients and AdamW's
    moments, plus what eager attention keeps: scores and probabilities for
    every layer, or one layer's while it is recomputed."""
    params = 134.5e6
    attention = 2 * HEADS * seq * seq * 4
    return 16 * params + attention * (1 if checkpointed else LAYERS)


def available_bytes():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run_case(seq, checkpointing, threads, steps):
    checkpointed = checkpointing == "layers"
    if estimated_bytes(seq, checkpointed) > available_bytes():
        print(f"nofit {estimated_bytes(seq, checkpointed) / 2**30:.1f}")
        return
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = train_torch.Model(HIDDEN, LAYERS, HEADS, FFN, seq, **SHAPE,
                              checkpoint_layers=checkpointed)
    optimizer = train_torch.make_optimizer(model, lr=1e-4)

    def step():
        ids = torch.randint(0, model.vocab, (1, seq))
        targets = torch.randint(0, model.vocab, (1, seq))
        optimizer.zero_grad()
        model(ids, targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    step()
    best = float("inf")
    for _ in range(steps):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    print(f"{seq / best:.2f} {train_torch.peak_rss_mib() / 1024:.2f}")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--case"]:
        run_case(int(args[1]), args[2], int(args[3]), int(args[4]))
        return
    options = dict(zip(args[::2], args[1::2]))
    seqs = options.get("--seqs", "2048,8192").split(",")
    modes = options.get("--checkpointing", "none,layers").split(",")
    thread_counts = options.get("--threads", "1,2").split(",")
    steps = options.get("--steps", "1")
    print(f"PyTorch {torch.__version__} eager fine-tuning step at the "
          f"SmolLM2-135M shape, batch 1 (1 warm-up, best of {steps})")
    print("| seq | checkpointing | threads | tok/s | peak RSS GiB |")
    print("| --- | --- | --- | --- | --- |")
    for seq in seqs:
        for mode in modes:
            for threads in thread_counts:
                # As train_torch.py: pin PyTorch's and OpenBLAS's pools.
                env = dict(os.environ, OMP_NUM_THREADS=threads,
                           OPENBLAS_NUM_THREADS=threads)
                result = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--case", seq,
                     mode, threads, steps],
                    capture_output=True, text=True, env=env)
                fields = result.stdout.split()
                if result.returncode != 0 or not fields:
                    cells = f"failed (exit {result.returncode}) |"
                elif fields[0] == "nofit":
                    cells = f"does not fit: needs {fields[1]} GiB |"
                else:
                    cells = f"{float(fields[0]):.1f} | {float(fields[1]):.2f}"
                print(f"| {seq} | {mode} | {threads} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
