#include "train/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "core/checked_math.h"
#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"

namespace rotor::train {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian");

namespace {

constexpr SafetensorsDtype kAllDtypes[] = {
    SafetensorsDtype::kF32, SafetensorsDtype::kI32, SafetensorsDtype::kI64,
    SafetensorsDtype::kU16};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// prod(shape) * element_size: the tensor's bytes; throws naming `where` and
// the shape if an extent is negative or the count overflows.
uint64_t ByteLength(const std::vector<int64_t>& shape, size_t element_size,
                    const std::string& where) {
  return CheckedByteCount(
      shape, element_size,
      StrCat(where, ": the bytes of shape ", ShapeText(shape)));
}

// Refuses a header (a JSON object) of more than kMaxSafetensorsEntries
// tensors and metadata keys.
void CheckEntryCount(const Json& header, const std::string& source) {
  const auto metadata = header.find("__metadata__");
  const bool has_metadata = metadata != header.end();
  const size_t entries =
      header.size() - has_metadata +
      (has_metadata && metadata->is_object() ? metadata->size() : 0);
  ROTOR_CHECK(entries <= kMaxSafetensorsEntries, source, ": header has ",
              entries, " tensors and metadata keys, more than the limit of ",
              kMaxSafetensorsEntries);
}

}  // namespace

const char* SafetensorsDtypeName(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF32:
      return "F32";
    case SafetensorsDtype::kI32:
      return "I32";
    case SafetensorsDtype::kI64:
      return "I64";
    case SafetensorsDtype::kU16:
      return "U16";
  }
  return "?";
}

size_t SafetensorsDtypeSize(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF32:
    case SafetensorsDtype::kI32:
      return 4;
    case SafetensorsDtype::kI64:
      return 8;
    case SafetensorsDtype::kU16:
      return 2;
  }
  return 0;
}

void WriteSafetensors(const std::string& path,
                      const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Order: larger elements first (keeps every tensor naturally aligned),
  // then by name.
  std::vector<const SafetensorsEntry*> order;
  std::set<std::string> names;
  for (const SafetensorsEntry& entry : tensors) {
    ROTOR_CHECK(!entry.name.empty() && entry.name != "__metadata__", path,
                ": invalid tensor name '", entry.name, "'");
    ROTOR_CHECK(names.insert(entry.name).second, path,
                ": duplicate tensor name '", entry.name, "'");
    order.push_back(&entry);
  }
  std::sort(order.begin(), order.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
              const size_t sa = SafetensorsDtypeSize(a->dtype);
              const size_t sb = SafetensorsDtypeSize(b->dtype);
              return sa != sb ? sa > sb : a->name < b->name;
            });

  Json header = Json::object();
  Json& meta = header["__metadata__"] = Json::object();
  std::map<std::string, std::string> all_metadata = metadata;
  all_metadata.emplace("format", "pt");
  for (const auto& [key, value] : all_metadata) meta[key] = value;
  std::vector<uint64_t> lengths;
  uint64_t offset = 0;
  for (const SafetensorsEntry* entry : order) {
    const std::string where = StrCat(path, ": tensor '", entry->name, "'");
    const uint64_t length =
        ByteLength(entry->shape, SafetensorsDtypeSize(entry->dtype), where);
    ROTOR_CHECK(length == 0 || entry->data != nullptr, where,
                ": null data pointer");
    header[entry->name] = {{"dtype", SafetensorsDtypeName(entry->dtype)},
                           {"shape", entry->shape},
                           {"data_offsets", {offset, offset + length}}};
    lengths.push_back(length);
    offset = CheckedAdd(offset, length, "the size of " + path);
  }
  CheckEntryCount(header, path);
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  ROTOR_CHECK(header_text.size() <= kMaxSafetensorsHeaderBytes, path,
              ": header of ", header_text.size(),
              " bytes exceeds the limit of ", kMaxSafetensorsHeaderBytes,
              " bytes");

  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) {
    length_bytes[i] = static_cast<unsigned char>(
        static_cast<uint64_t>(header_text.size()) >> (8 * i));
  }
  AtomicFileWriter out(path);
  out.Write(length_bytes, sizeof(length_bytes));
  out.Write(header_text);
  for (size_t i = 0; i < order.size(); ++i) {
    out.Write(order[i]->data, lengths[i]);
  }
  out.Commit();
}

SafetensorsFile SafetensorsFile::Read(const std::string& path) {
  return Parse(ReadFile(path), path);
}

SafetensorsFile SafetensorsFile::Parse(std::string bytes,
                                       const std::string& source) {
  SafetensorsFile file;
  file.source_ = source;
  ROTOR_CHECK(bytes.size() >= 8, source, ": not a safetensors file (",
              bytes.size(), " bytes, too short for the 8-byte header length)");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) {
    header_size = (header_size << 8) | static_cast<unsigned char>(bytes[i]);
  }
  ROTOR_CHECK(header_size <= kMaxSafetensorsHeaderBytes, source,
              ": header length ", header_size, " exceeds the limit of ",
              kMaxSafetensorsHeaderBytes, " bytes");
  ROTOR_CHECK(header_size <= bytes.size() - 8, source, ": header length ",
              header_size, " runs past the end of the file (", bytes.size() - 8,
              " bytes after the length field)");
  const std::string_view header_text(bytes.data() + 8, header_size);
  ROTOR_CHECK(header_text.find_first_not_of(" \t\r\n") != std::string::npos &&
                  header_text[header_text.find_first_not_of(" \t\r\n")] == '{',
              source, ": header is not a JSON object");
  const Json header = ParseJson(header_text, source + " (header)");
  file.data_start_ = 8 + header_size;
  const uint64_t data_size = bytes.size() - file.data_start_;
  CheckEntryCount(header, source);

  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      ROTOR_CHECK(value.is_object(), source,
                  ": __metadata__ must be an object of strings");
      for (const auto& [key, text] : value.items()) {
        ROTOR_CHECK(text.is_string(), source, ": __metadata__ value of '", key,
                    "' is a ", text.type_name(),
                    ", but safetensors metadata must be strings");
        file.metadata_[key] = text.get<std::string>();
      }
      continue;
    }
    const std::string where = StrCat(source, ": tensor '", name, "'");
    ROTOR_CHECK(value.is_object(), where, ": entry is not an object");
    for (const auto& member : value.items()) {
      ROTOR_CHECK(member.key() == "dtype" || member.key() == "shape" ||
                      member.key() == "data_offsets",
                  where, ": unexpected key '", member.key(), "'");
    }
    ROTOR_CHECK(value.contains("dtype") && value.contains("shape") &&
                    value.contains("data_offsets"),
                where, ": needs dtype, shape and data_offsets");
    const Json& dtype = value["dtype"];
    const Json& shape = value["shape"];
    const Json& offsets = value["data_offsets"];
    ROTOR_CHECK(dtype.is_string(), where, ": dtype is not a string");
    TensorInfo info;
    info.name = name;
    bool known = false;
    for (SafetensorsDtype candidate : kAllDtypes) {
      if (dtype.get<std::string>() == SafetensorsDtypeName(candidate)) {
        info.dtype = candidate;
        known = true;
      }
    }
    ROTOR_CHECK(known, where, ": unsupported dtype ", dtype.dump(),
                " (rotor reads F32, I32, I64, U16)");
    ROTOR_CHECK(shape.is_array(), where, ": shape is not an array");
    for (const Json& extent : shape) {
      ROTOR_CHECK(extent.is_number(), where, ": shape has a non-number");
      info.shape.push_back(JsonAs<int64_t>(extent, where + ": bad shape"));
    }
    ROTOR_CHECK(offsets.is_array() && offsets.size() == 2, where,
                ": data_offsets must be [BEGIN, END]");
    info.begin = JsonAs<uint64_t>(offsets[0], where + ": bad data_offsets");
    info.end = JsonAs<uint64_t>(offsets[1], where + ": bad data_offsets");
    ROTOR_CHECK(info.begin <= info.end && info.end <= data_size, where,
                ": data_offsets [", info.begin, ", ", info.end,
                "] out of range (the data buffer has ", data_size, " bytes)");
    const uint64_t expected =
        ByteLength(info.shape, SafetensorsDtypeSize(info.dtype), where);
    ROTOR_CHECK(info.end - info.begin == expected, where, ": shape ",
                ShapeText(info.shape), " x ", SafetensorsDtypeSize(info.dtype),
                " bytes = ", expected, " bytes, but data_offsets span ",
                info.end - info.begin);
    file.tensors_.push_back(std::move(info));
  }

  // The buffer must be covered exactly: sorted by offset, each tensor starts
  // where the previous ended, and the last ends at the end of the file.
  std::stable_sort(file.tensors_.begin(), file.tensors_.end(),
                   [](const TensorInfo& a, const TensorInfo& b) {
                     return a.begin != b.begin ? a.begin < b.begin
                                               : a.end < b.end;
                   });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& info : file.tensors_) {
    ROTOR_CHECK(info.begin >= covered, source, ": tensors '", previous->name,
                "' and '", info.name, "' overlap (bytes ", info.begin, "..",
                covered, ")");
    ROTOR_CHECK(info.begin == covered, source, ": bytes ", covered, "..",
                info.begin, " of the data buffer belong to no tensor (before '",
                info.name, "')");
    covered = info.end;
    previous = &info;
  }
  ROTOR_CHECK(covered == data_size, source, ": ", data_size - covered,
              " trailing bytes after the last tensor");
  file.bytes_ = std::move(bytes);
  return file;
}

const SafetensorsFile::TensorInfo* SafetensorsFile::Find(
    const std::string& name) const {
  for (const TensorInfo& info : tensors_) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const void* SafetensorsFile::Data(const TensorInfo& info) const {
  return bytes_.data() + data_start_ + info.begin;
}

std::vector<float> SafetensorsFile::ReadF32(
    const std::string& name, const std::vector<int64_t>* expected_shape) const {
  const TensorInfo* info = Find(name);
  ROTOR_CHECK(info != nullptr, source_, ": no tensor named '", name, "'");
  ROTOR_CHECK(info->dtype == SafetensorsDtype::kF32, source_, ": tensor '",
              name, "' has dtype ", SafetensorsDtypeName(info->dtype),
              ", expected F32");
  ROTOR_CHECK(expected_shape == nullptr || info->shape == *expected_shape,
              source_, ": tensor '", name, "' has shape ",
              ShapeText(info->shape), ", expected ",
              expected_shape ? ShapeText(*expected_shape) : "");
  std::vector<float> values((info->end - info->begin) / sizeof(float));
  // An empty vector's data() may be null, and memcpy wants valid pointers
  // even for 0 bytes.
  if (!values.empty()) {
    std::memcpy(values.data(), Data(*info), info->end - info->begin);
  }
  return values;
}

}  // namespace rotor::train
