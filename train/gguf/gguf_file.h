// GGUF, the single-file model format of llama.cpp and ggml (ggml's
// docs/gguf.md, version 3), written from rotor: metadata key-value pairs and
// tensors, little-endian throughout.
//
//   "GGUF" | u32 version = 3 | u64 tensor_count | u64 kv_count
//   kv_count x   (string key, u32 value_type, value)
//   tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
//                   u64 offset)            ne[0] is the innermost dimension
//   zero padding to general.alignment (32 unless the key says otherwise)
//   tensor data, each tensor at data_start + offset, offsets multiples of
//   the alignment, zero padding between tensors
//
// A string is u64 byte length + bytes (UTF-8, no terminator); an array is
// u32 element type + u64 count + elements. GgufWriter collects the pairs and
// tensors in order and writes the file atomically (train/io/atomic_file.h);
// a repeated key or tensor name is refused before anything is written.
#ifndef ROTOR_TRAIN_GGUF_GGUF_FILE_H_
#define ROTOR_TRAIN_GGUF_GGUF_FILE_H_

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace rotor::train {

// GGUF metadata value types (gguf_type in ggml's gguf.h).
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// The ggml tensor types rotor writes (ggml_type in ggml.h).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ8_0 = 8,
  kBF16 = 30,
};

// Appends the bytes of `value` to `out`, little-endian (rotor runs on
// x86-64 and little-endian ARM only, so the bytes in memory are the file's).
template <typename T>
void AppendLittleEndian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

inline constexpr uint32_t kGgufVersion = 3;
inline constexpr uint64_t kGgufAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT

class GgufWriter {
 public:
  // Metadata, in the order they are added.
  void AddUint32(const std::string& key, uint32_t value);
  void AddInt32(const std::string& key, int32_t value);
  void AddFloat32(const std::string& key, float value);
  void AddBool(const std::string& key, bool value);
  void AddString(const std::string& key, const std::string& value);
  void AddStringArray(const std::string& key,
                      const std::vector<std::string>& values);
  void AddFloat32Array(const std::string& key,
                       const std::vector<float>& values);
  void AddInt32Array(const std::string& key,
                     const std::vector<int32_t>& values);

  // A tensor of ggml dimensions `ne` (ne[0] innermost: a row-major
  // [rows, cols] matrix is ne = {cols, rows}) whose encoded bytes are
  // `data` (GgufTensorBytes, train/gguf/gguf_tensors.h).
  void AddTensor(const std::string& name, std::vector<uint64_t> ne,
                 GgmlType type, std::string data);

  // Writes the file to `path` atomically: the header, the pairs and the
  // tensor infos, then each tensor's data, padded to the alignment.
  void Write(const std::string& path) const;

  int64_t num_keys() const { return num_keys_; }

 private:
  // Everything before the tensor data, padded to the alignment.
  std::string Header() const;
  void AddKey(const std::string& key, GgufValueType type);

  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    std::string data;
  };
  std::string metadata_;  // the key-value pairs, already encoded
  int64_t num_keys_ = 0;
  std::set<std::string> keys_;
  std::set<std::string> tensor_names_;
  std::vector<Tensor> tensors_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_GGUF_GGUF_FILE_H_
