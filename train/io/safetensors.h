// safetensors: the Hugging Face tensor file format (huggingface/safetensors),
// used for rotor's weights and optimizer moments so that Python tools
// (safetensors.torch.load_file, transformers) open them directly.
//
//   bytes 0..7   N, the header length (unsigned 64-bit little-endian)
//   bytes 8..8+N a JSON object, UTF-8, padded with trailing spaces:
//                {"__metadata__": {"format": "pt", ...string -> string...},
//                 "NAME": {"dtype": "F32", "shape": [2, 3],
//                          "data_offsets": [BEGIN, END]}, ...}
//   then         the data buffer; a tensor's bytes are [BEGIN, END) of it,
//                row-major, little-endian, END - BEGIN = prod(shape) * size.
//
// The writer follows the reference implementation: tensors ordered by
// decreasing dtype size, then by name (so with one dtype: by name), the
// header padded with spaces to a multiple of 8 so the data starts 8-byte
// aligned, "format": "pt" always in __metadata__ (transformers requires it).
// The reader checks everything and names the file and tensor in errors:
// header length beyond the file or over kMaxSafetensorsHeaderBytes, more
// than kMaxSafetensorsEntries tensors and metadata keys, invalid JSON, unknown
// dtype, bad shape, offsets out of range (a truncated file), overlapping or
// leaving holes, byte length not equal to the shape's size.
//
// Reading a file maps it (train/io/mapped_file.h) instead of copying it into
// the heap, and ReadAsF32 converts one tensor at a time into the caller's
// float32 memory, dropping the file's pages from the process as it goes.
// Loading every tensor one after another, as a model loader does, so peaks
// near the size of the float32 weights rather than that plus the file's.
#ifndef ROTOR_TRAIN_IO_SAFETENSORS_H_
#define ROTOR_TRAIN_IO_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "train/io/mapped_file.h"

namespace rotor::train {

// Bounds on what a header may hold (docs/limits.md), far above what a real
// checkpoint needs (rotor's: a few KiB and under 100 tensors; large Hugging
// Face checkpoints: under 1 MiB and a few thousand tensors), so a hostile
// header cannot make the reader spend minutes or gigabytes. The reader and
// the writer both enforce them.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{16} << 20;
// Tensors plus __metadata__ keys.
inline constexpr uint64_t kMaxSafetensorsEntries = 65536;

// The dtypes rotor reads and writes (a subset of safetensors'). BF16 and F16
// are bfloat16 and IEEE half (core/kernels/convert.h), stored and passed as
// their uint16_t bit patterns.
enum class SafetensorsDtype { kF32, kI32, kI64, kU16, kBF16, kF16 };

// "F32", "I32", "I64", "U16", "BF16", "F16".
const char* SafetensorsDtypeName(SafetensorsDtype dtype);
// Bytes per element: 4, 4, 8, 2, 2, 2.
size_t SafetensorsDtypeSize(SafetensorsDtype dtype);

// A tensor to write: `data` points at prod(shape) elements of `dtype`
// (row-major), and must stay valid until WriteSafetensors returns.
struct SafetensorsEntry {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes `path` atomically (temporary file, then rename). `metadata` goes to
// __metadata__ ("format": "pt" is added unless given). Throws rotor::Error
// for an empty or duplicate name, a name "__metadata__", a negative extent
// or a null data pointer for a non-empty tensor.
void WriteSafetensors(const std::string& path,
                      const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// A validated safetensors file: mapped from disk (Read) or bytes in memory
// (Parse). Movable, not copyable.
class SafetensorsFile {
 public:
  struct TensorInfo {
    std::string name;
    SafetensorsDtype dtype;
    std::vector<int64_t> shape;
    size_t begin = 0;  // byte offsets into the data buffer
    size_t end = 0;
  };

  // Maps and validates `path`; throws rotor::Error naming the file (and the
  // tensor, where one is at fault). Only the header is read here, and every
  // tensor is checked to lie inside the file, so a truncated file is an
  // error now, not a crash later. The mapping keeps the file alive: deleting
  // or replacing `path` afterwards (rotor's writers replace files by rename)
  // changes nothing for this object; truncating it in place is not allowed.
  static SafetensorsFile Read(const std::string& path);
  // The same checks on bytes already in memory; `source` names them.
  static SafetensorsFile Parse(std::string bytes, const std::string& source);

  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }
  // In file order (increasing data offset).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr if absent.
  const TensorInfo* Find(const std::string& name) const;
  // Pointer to a tensor's bytes (8-byte aligned when the writer aligned the
  // header, as rotor's does), valid while this object lives.
  const void* Data(const TensorInfo& info) const;

  // Writes tensor `info` (one of tensors()) to out[0 .. prod(shape)) as
  // float32: F32 is copied, BF16 and F16 are converted exactly
  // (core/kernels/convert.h), in parallel on rotor's threads. Any other
  // dtype throws rotor::Error naming the file, the tensor and the dtypes
  // that convert. It goes in blocks of 4 MiB of the file: the pages of
  // `out` a block fills are faulted in first, in one system call (fresh
  // memory faulted a page at a time costs more than the conversion), and
  // for a mapped file the pages the block was read from are dropped from
  // this process after (MappedFile::ReleasePages). So a tensor costs its
  // float32 bytes, not those plus its bytes in the file, and Data() stays
  // valid (dropped pages come back from the page cache if touched again).
  void ReadAsF32(const TensorInfo& info, float* out) const;

  // Copies tensor `name` into a vector after checking that it exists, has
  // dtype F32 and (when `expected_shape` is not null) exactly that shape;
  // its pages are then dropped as by ReadAsF32.
  std::vector<float> ReadF32(
      const std::string& name,
      const std::vector<int64_t>* expected_shape = nullptr) const;

 private:
  // Checks the header of bytes() and fills the fields below from it.
  void ParseHeader(const std::string& source);
  // The whole file: the mapping (Read) or the bytes given to Parse.
  std::string_view bytes() const {
    return mapped_.bytes().empty() ? std::string_view(parsed_bytes_)
                                   : mapped_.bytes();
  }

  std::string source_;
  MappedFile mapped_;
  std::string parsed_bytes_;
  size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_SAFETENSORS_H_
