#!/usr/bin/env python3
"""Cross-checks safetensors files written by rotor with Python tools.

Usage: python3 scripts/check_safetensors.py FILE.safetensors...

For each file it prints every tensor's name, dtype, shape and a checksum,
loaded by the best reader available:
  1. the `safetensors` package (safetensors.numpy.load_file), the reference;
  2. otherwise torch (torch.frombuffer) or numpy (numpy.frombuffer) over an
     independent, spec-following parse with Python's own json module.
Exit status 1 if any file fails. This is an optional developer check, not a
test dependency.
"""
import json
import struct
import sys

DTYPES = {"F32": ("<f4", 4), "I32": ("<i4", 4), "I64": ("<i8", 8),
          "U16": ("<u2", 2), "F64": ("<f8", 8), "F16": ("<f2", 2),
          "BF16": ("<u2", 2)}  # numpy has no bfloat16: decoded below


def parse(path):
    """Returns (metadata, {name: (dtype, shape, bytes)}) per the spec."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), "header length beyond the file"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values())
    buffer = data[8 + n:]
    tensors, spans = {}, []
    for name, info in header.items():
        begin, end = info["data_offsets"]
        count = 1
        for extent in info["shape"]:
            count *= extent
        assert end - begin == count * DTYPES[info["dtype"]][1], name
        tensors[name] = (info["dtype"], info["shape"], buffer[begin:end])
        spans.append((begin, end))
    spans.sort()
    position = 0
    for begin, end in spans:
        assert begin == position, "hole or overlap in the data buffer"
        position = end
    assert position == len(buffer), "trailing bytes"
    return metadata, tensors


def check(path):
    try:
        from safetensors.numpy import load_file  # the reference reader
        arrays = load_file(path)
        print(f"{path}: loaded with safetensors")
        for name, array in sorted(arrays.items()):
            print(f"  {name} {array.dtype} {list(array.shape)} "
                  f"sum={float(array.astype('float64').sum())!r}")
        return
    except ImportError:
        pass
    metadata, tensors = parse(path)
    print(f"{path}: parsed per the spec; metadata {metadata}")
    try:
        import torch
        torch_dtypes = {"F32": torch.float32, "I32": torch.int32,
                        "I64": torch.int64, "F64": torch.float64,
                        "F16": torch.float16, "BF16": torch.bfloat16}
    except ImportError:
        torch = None
    import numpy
    for name, (dtype, shape, raw) in tensors.items():
        if torch is not None and dtype in torch_dtypes and raw:
            value = torch.frombuffer(bytearray(raw),
                                     dtype=torch_dtypes[dtype]).reshape(shape)
            total = float(value.double().sum())
            reader = "torch"
        else:
            value = numpy.frombuffer(raw, dtype=DTYPES[dtype][0]).reshape(shape)
            if dtype == "BF16":  # the top half of a float32
                value = (value.astype("<u4") << 16).view("<f4")
            total = float(value.astype("float64").sum())
            reader = "numpy"
        print(f"  {name} {dtype} {shape} sum={total!r} ({reader})")


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    status = 0
    for path in paths:
        try:
            check(path)
        except Exception as error:  # report every file, then fail
            print(f"{path}: FAILED: {error!r}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
