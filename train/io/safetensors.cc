#include "train/io/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/kernels/convert.h"
#include "core/kernels/row_split.h"
#include "core/parallel.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/io/message.h"

namespace rotor::train {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian");

namespace {

constexpr SafetensorsDtype kAllDtypes[] = {
    SafetensorsDtype::kF32, SafetensorsDtype::kI32,  SafetensorsDtype::kI64,
    SafetensorsDtype::kU16, SafetensorsDtype::kBF16, SafetensorsDtype::kF16};

// ReadAsF32 converts a tensor in blocks of this many bytes of the file and
// drops each block's pages once converted, so that about two blocks of the
// file are resident at a time.
constexpr size_t kConvertBlockBytes = size_t{4} << 20;

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

// Faults in the pages of out[0 .. n) for writing in one system call
// (madvise MADV_POPULATE_WRITE, Linux 5.14+) before they are written. A fresh
// float32 tensor is memory never touched, and faulting it in a page at a
// time, as the first stores would, costs several times the conversion
// itself; populating each block first made loading a bfloat16 SmolLM2-135M
// into fresh tensors about 25% faster. Populating pages that are already
// there still walks each one (a load into tensors written before took 60%
// longer), so the first page is asked first (mincore) and stands for the
// rest. Only whole pages inside the range are advised: the memory around
// belongs to others. It is advice: where the kernel refuses it, the stores
// fault the pages in as before.
void PrefaultForWriting(float* out, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin =
      (reinterpret_cast<uintptr_t>(out) + page - 1) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(out + n) / page * page;
  if (begin >= end) return;
  void* const first_page = reinterpret_cast<void*>(begin);
  unsigned char resident = 0;
  if (::mincore(first_page, page, &resident) == 0 && (resident & 1)) return;
  ::madvise(first_page, end - begin, MADV_POPULATE_WRITE);
}

// out[0 .. n) = the n elements of `dtype` (F32, BF16 or F16) at `in`, as
// float32, over rotor's threads.
void ConvertToF32(SafetensorsDtype dtype, const char* in, float* out,
                  size_t n) {
  const auto* in16 = reinterpret_cast<const uint16_t*>(in);
  switch (dtype) {
    case SafetensorsDtype::kBF16:
      kernels::BF16ToF32(in16, out, n);
      return;
    case SafetensorsDtype::kF16:
      kernels::F16ToF32(in16, out, n);
      return;
    default:  // F32, the one other dtype ReadAsF32 lets through
      ParallelFor(n, kernels::kMinFloatsPerTask,
                  [&](int64_t begin, int64_t end) {
                    std::memcpy(out + begin, in + begin * sizeof(float),
                                (end - begin) * sizeof(float));
                  });
  }
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
    case SafetensorsDtype::kBF16:
      return "BF16";
    case SafetensorsDtype::kF16:
      return "F16";
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
    case SafetensorsDtype::kBF16:
    case SafetensorsDtype::kF16:
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
  SafetensorsFile file;
  file.mapped_ = MappedFile(path);
  file.ParseHeader(path);
  return file;
}

SafetensorsFile SafetensorsFile::Parse(std::string bytes,
                                       const std::string& source) {
  SafetensorsFile file;
  file.parsed_bytes_ = std::move(bytes);
  file.ParseHeader(source);
  return file;
}

void SafetensorsFile::ParseHeader(const std::string& source) {
  source_ = source;
  const std::string_view bytes = this->bytes();
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
  data_start_ = 8 + header_size;
  const uint64_t data_size = bytes.size() - data_start_;
  CheckEntryCount(header, source);

  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      ROTOR_CHECK(value.is_object(), source,
                  ": __metadata__ must be an object of strings");
      for (const auto& [key, text] : value.items()) {
        ROTOR_CHECK(text.is_string(), source, ": __metadata__ value of '",
                    Excerpt(key), "' is a ", text.type_name(),
                    ", but safetensors metadata must be strings");
        metadata_[key] = text.get<std::string>();
      }
      continue;
    }
    const std::string where = StrCat(source, ": tensor '", Excerpt(name), "'");
    ROTOR_CHECK(value.is_object(), where, ": entry is not an object");
    for (const auto& member : value.items()) {
      ROTOR_CHECK(member.key() == "dtype" || member.key() == "shape" ||
                      member.key() == "data_offsets",
                  where, ": unexpected key '", Excerpt(member.key()), "'");
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
    ROTOR_CHECK(known, where, ": unsupported dtype ", Excerpt(dtype.dump()),
                " (rotor reads F32, I32, I64, U16, BF16, F16)");
    ROTOR_CHECK(shape.is_array(), where, ": shape is not an array");
    for (const Json& extent : shape) {
      ROTOR_CHECK(extent.is_number(), where, ": shape has a non-number");
      info.shape.push_back(JsonAs<int64_t>(extent, where + ": bad shape"));
    }
    ROTOR_CHECK(offsets.is_array() && offsets.size() == 2, where,
                ": data_offsets must be [BEGIN, END]");
    info.begin = JsonAs<uint64_t>(offsets[0], where + ": bad data_offsets");
    info.end = JsonAs<uint64_t>(offsets[1], where + ": bad data_offsets");
    ROTOR_CHECK(info.begin <= info.end, where, ": data_offsets [", info.begin,
                ", ", info.end, "] out of range (BEGIN > END)");
    ROTOR_CHECK(
        info.end <= data_size, where, ": data_offsets [", info.begin, ", ",
        info.end, "] out of range (the data buffer has ", data_size,
        " bytes): the file is truncated or its header is "
        "wrong: it has ",
        bytes.size(), " bytes, this tensor needs ", data_start_ + info.end);
    const uint64_t expected =
        ByteLength(info.shape, SafetensorsDtypeSize(info.dtype), where);
    ROTOR_CHECK(info.end - info.begin == expected, where, ": shape ",
                ShapeText(info.shape), " x ", SafetensorsDtypeSize(info.dtype),
                " bytes = ", expected, " bytes, but data_offsets span ",
                info.end - info.begin);
    tensors_.push_back(std::move(info));
  }

  // The buffer must be covered exactly: sorted by offset, each tensor starts
  // where the previous ended, and the last ends at the end of the file.
  std::stable_sort(tensors_.begin(), tensors_.end(),
                   [](const TensorInfo& a, const TensorInfo& b) {
                     return a.begin != b.begin ? a.begin < b.begin
                                               : a.end < b.end;
                   });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& info : tensors_) {
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
}

const SafetensorsFile::TensorInfo* SafetensorsFile::Find(
    const std::string& name) const {
  for (const TensorInfo& info : tensors_) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const void* SafetensorsFile::Data(const TensorInfo& info) const {
  return bytes().data() + data_start_ + info.begin;
}

void SafetensorsFile::ReadAsF32(const TensorInfo& info, float* out) const {
  ROTOR_CHECK(info.dtype == SafetensorsDtype::kF32 ||
                  info.dtype == SafetensorsDtype::kBF16 ||
                  info.dtype == SafetensorsDtype::kF16,
              source_, ": tensor '", Excerpt(info.name), "' has dtype ",
              SafetensorsDtypeName(info.dtype),
              ", which does not convert to float32 (F32, BF16 and F16 do)");
  const size_t element_size = SafetensorsDtypeSize(info.dtype);
  const size_t count = (info.end - info.begin) / element_size;
  const size_t block = kConvertBlockBytes / element_size;
  const size_t file_offset = data_start_ + info.begin;
  const char* in = bytes().data() + file_offset;
  for (size_t done = 0; done < count; done += block) {
    const size_t n = std::min(block, count - done);
    PrefaultForWriting(out + done, n);
    ConvertToF32(info.dtype, in + done * element_size, out + done, n);
    // Reading a page of a mapped file maps its neighbours in the page cache
    // too (the kernel's fault-around, as much as a large folio), so pages
    // of the block before, already released, may be back: release from one
    // block back. Measured on a SmolLM2-135M file: without it, 7% of the
    // float32 bytes stayed resident at the end, with it under 1%.
    const size_t block_begin = file_offset + done * element_size;
    const size_t back = std::min(block_begin, kConvertBlockBytes);
    mapped_.ReleasePages(block_begin - back, back + n * element_size);
  }
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
  ReadAsF32(*info, values.data());
  return values;
}

}  // namespace rotor::train
