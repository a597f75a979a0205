#!/usr/bin/python3
"""A model on paper of data-parallel training over N machines
(docs/distributed.md, "A model of larger jobs").

Each machine is one rank that computes a step of `tokens` tokens in the
measured time `step_seconds` (forward + backward + AdamW on one machine:
bench/distributed_bench.sh), as a weak-scaling job does (the global batch
grows with N: train.gradient_accumulation_steps = N x the YAML's). The
gradients, 4 bytes per parameter, are summed in buckets of
train.allreduce_bucket_mb, as rotor does:

- buckets hold the parameters in reverse order of the model's list; a
  bucket's sum can start when its last gradient is final. The backward pass
  takes 2/3 of the step (its matrix products are twice the forward's) and
  finishes the gradients evenly in that order, except the embedding, which
  is final only at the very end (its lookup is the first layer of the
  forward pass, so the last of the backward);
- the network carries one bucket at a time; a ring allreduce of S bytes
  over N ranks takes 2 (N-1)/N S / bandwidth + 2 (N-1) latency;
- the step ends when the compute and the last sum are both done.

Printed per N: tokens/s of the job, the step time, the exposed share (the
step's part spent only waiting for sums), the time the sums take, and where
they stop hiding behind the backward pass: the per-machine batch below which
they outlast it, and how many times faster than the measured one a machine
can compute before they do at this batch.

Usage: /usr/bin/python3 bench/distributed_model.py
  --step-seconds-default S  --step-seconds-smollm S  (measured; see the doc)
  [--tokens 4096] [--bandwidth-gbit 25] [--latency-us 20] [--bucket-mb 25]
"""
import argparse


def llama_parameter_sizes(vocab, hidden, intermediate, layers, heads,
                          kv_heads, head_dim, tied):
    """Element counts in rotor's parameter order (nn::Transformer)."""
    sizes = [vocab * hidden]  # model.embed_tokens.weight
    for _ in range(layers):
        sizes += [hidden,                          # input_layernorm
                  hidden * heads * head_dim,        # q_proj
                  hidden * kv_heads * head_dim,     # k_proj
                  hidden * kv_heads * head_dim,     # v_proj
                  heads * head_dim * hidden,        # o_proj
                  hidden,                           # post_attention_layernorm
                  hidden * intermediate,            # gate_proj
                  hidden * intermediate,            # up_proj
                  intermediate * hidden]            # down_proj
    sizes.append(hidden)  # model.norm
    if not tied:
        sizes.append(vocab * hidden)  # lm_head
    return sizes


def buckets(sizes, bucket_bytes):
    """(bytes, parameters before it in reverse order, holds the embedding)."""
    out, current, seen = [], 0, 0
    for index in reversed(range(len(sizes))):
        size = sizes[index] * 4
        if current and current + size > bucket_bytes:
            out.append([current, seen, False])
            current = 0
        current += size
        seen += sizes[index]
        if index == 0:
            out.append([current, seen, True])
    return out


def allreduce_seconds(nbytes, ranks, bandwidth, latency):
    if ranks == 1:
        return 0.0
    return (2 * (ranks - 1) / ranks * nbytes / bandwidth
            + 2 * (ranks - 1) * latency)


def step(sizes, step_seconds, ranks, bandwidth, latency, bucket_bytes):
    total = sum(sizes)
    forward = step_seconds / 3
    backward = 2 * step_seconds / 3
    network_free = 0.0
    comm = 0.0
    for nbytes, done, embedding in buckets(sizes, bucket_bytes):
        ready = forward + backward * (1.0 if embedding else done / total)
        start = max(ready, network_free)
        seconds = allreduce_seconds(nbytes, ranks, bandwidth, latency)
        network_free = start + seconds
        comm += seconds
    return max(step_seconds, network_free), comm


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--step-seconds-default", type=float, required=True)
    parser.add_argument("--step-seconds-smollm", type=float, required=True)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--bandwidth-gbit", type=float, default=25.0)
    parser.add_argument("--latency-us", type=float, default=20.0)
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    args = parser.parse_args()
    bandwidth = args.bandwidth_gbit * 1e9 / 8
    latency = args.latency_us * 1e-6
    bucket_bytes = args.bucket_mb * (1 << 20)
    configs = {
        # configs/default.yaml
        "default": (llama_parameter_sizes(257, 192, 512, 4, 6, 2, 32, True),
                    args.step_seconds_default),
        # configs/models/smollm2-135m.yaml
        "smollm2-135m": (llama_parameter_sizes(49152, 576, 1536, 30, 9, 3,
                                               64, True),
                         args.step_seconds_smollm),
    }
    print(f"per machine: {args.tokens} tokens per step; network "
          f"{args.bandwidth_gbit} Gb/s, latency {args.latency_us} us; "
          f"buckets of {args.bucket_mb} MiB")
    print("| config | params | gradient MB | buckets | N | tokens/s | step s "
          "| exposed | sums | sums outlast the backward below | or on a "
          "machine faster by |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (sizes, step_seconds) in configs.items():
        params = sum(sizes)
        count = len(buckets(sizes, bucket_bytes))
        for ranks in (1, 2, 8, 64):
            seconds, comm = step(sizes, step_seconds, ranks, bandwidth,
                                 latency, bucket_bytes)
            # The backward pass of t tokens takes 2/3 t step_seconds/tokens:
            # below t* = comm / that rate the sums outlast it.
            per_token_backward = 2 * step_seconds / 3 / args.tokens
            crossover = "| - | -"
            if ranks > 1:
                crossover = (f"| {comm / per_token_backward:,.0f} tokens "
                             f"| {2 * step_seconds / 3 / comm:,.0f}x")
            print(f"| {name} | {params:,} | {params * 4 / 1e6:.1f} "
                  f"| {count} | {ranks} | {ranks * args.tokens / seconds:,.0f} "
                  f"| {seconds:.3f} "
                  f"| {100 * (seconds - step_seconds) / seconds:.1f}% "
                  f"| {comm * 1e3:.1f} ms {crossover} |")


if __name__ == "__main__":
    main()
