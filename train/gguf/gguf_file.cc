#include "train/gguf/gguf_file.h"

#include <utility>

#include "core/error.h"
#include "train/io/atomic_file.h"

namespace rotor::train {

namespace {

void PutString(std::string& out, const std::string& text) {
  AppendLittleEndian<uint64_t>(out, text.size());
  out += text;
}

void PutArrayHeader(std::string& out, GgufValueType type, size_t count) {
  AppendLittleEndian<uint32_t>(out,
                               static_cast<uint32_t>(GgufValueType::kArray));
  AppendLittleEndian<uint32_t>(out, static_cast<uint32_t>(type));
  AppendLittleEndian<uint64_t>(out, count);
}

uint64_t AlignUp(uint64_t n) {
  return (n + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment;
}

}  // namespace

void GgufWriter::AddKey(const std::string& key, GgufValueType type) {
  ROTOR_CHECK(keys_.insert(key).second, "GGUF: metadata key ", key,
              " added twice");
  PutString(metadata_, key);
  if (type != GgufValueType::kArray) {
    AppendLittleEndian<uint32_t>(metadata_, static_cast<uint32_t>(type));
  }
  ++num_keys_;
}

void GgufWriter::AddUint32(const std::string& key, uint32_t value) {
  AddKey(key, GgufValueType::kUint32);
  AppendLittleEndian(metadata_, value);
}

void GgufWriter::AddInt32(const std::string& key, int32_t value) {
  AddKey(key, GgufValueType::kInt32);
  AppendLittleEndian(metadata_, value);
}

void GgufWriter::AddFloat32(const std::string& key, float value) {
  AddKey(key, GgufValueType::kFloat32);
  AppendLittleEndian(metadata_, value);
}

void GgufWriter::AddBool(const std::string& key, bool value) {
  AddKey(key, GgufValueType::kBool);
  AppendLittleEndian<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::AddString(const std::string& key, const std::string& value) {
  AddKey(key, GgufValueType::kString);
  PutString(metadata_, value);
}

void GgufWriter::AddStringArray(const std::string& key,
                                const std::vector<std::string>& values) {
  AddKey(key, GgufValueType::kArray);
  PutArrayHeader(metadata_, GgufValueType::kString, values.size());
  for (const std::string& value : values) PutString(metadata_, value);
}

void GgufWriter::AddFloat32Array(const std::string& key,
                                 const std::vector<float>& values) {
  AddKey(key, GgufValueType::kArray);
  PutArrayHeader(metadata_, GgufValueType::kFloat32, values.size());
  for (float value : values) AppendLittleEndian(metadata_, value);
}

void GgufWriter::AddInt32Array(const std::string& key,
                               const std::vector<int32_t>& values) {
  AddKey(key, GgufValueType::kArray);
  PutArrayHeader(metadata_, GgufValueType::kInt32, values.size());
  for (int32_t value : values) AppendLittleEndian(metadata_, value);
}

void GgufWriter::AddTensor(const std::string& name, std::vector<uint64_t> ne,
                           GgmlType type, std::string data) {
  ROTOR_CHECK(tensor_names_.insert(name).second, "GGUF: tensor ", name,
              " added twice");
  ROTOR_CHECK(!ne.empty() && ne.size() <= 4, "GGUF: tensor ", name, " has ",
              ne.size(), " dimensions, expected 1 to 4");
  tensors_.push_back({name, std::move(ne), type, std::move(data)});
}

std::string GgufWriter::Header() const {
  std::string out;
  out += "GGUF";
  AppendLittleEndian<uint32_t>(out, kGgufVersion);
  AppendLittleEndian<uint64_t>(out, tensors_.size());
  AppendLittleEndian<uint64_t>(out, static_cast<uint64_t>(num_keys_));
  out += metadata_;
  uint64_t offset = 0;
  for (const Tensor& tensor : tensors_) {
    PutString(out, tensor.name);
    AppendLittleEndian<uint32_t>(out, static_cast<uint32_t>(tensor.ne.size()));
    for (uint64_t n : tensor.ne) AppendLittleEndian<uint64_t>(out, n);
    AppendLittleEndian<uint32_t>(out, static_cast<uint32_t>(tensor.type));
    AppendLittleEndian<uint64_t>(out, offset);
    offset = AlignUp(offset + tensor.data.size());
  }
  out.resize(AlignUp(out.size()), '\0');
  return out;
}

void GgufWriter::Write(const std::string& path) const {
  AtomicFileWriter out(path);
  out.Write(Header());
  const std::string padding(kGgufAlignment, '\0');
  for (const Tensor& tensor : tensors_) {
    out.Write(tensor.data);
    out.Write(padding.data(), AlignUp(tensor.data.size()) - tensor.data.size());
  }
  out.Commit();
}

}  // namespace rotor::train
