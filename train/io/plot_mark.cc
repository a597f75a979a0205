#include "train/io/plot_mark.h"

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/output_file.h"

namespace rotor::train {

namespace {

constexpr char kPngSignature[] = "\x89PNG\r\n\x1a\n";
constexpr size_t kSignatureBytes = 8;
// The IHDR chunk: length, type, 13 bytes of data, CRC.
constexpr size_t kHeaderChunkBytes = 4 + 4 + 13 + 4;

// PNG's CRC-32 (ISO 3309, reflected polynomial 0xEDB88320) of `bytes`.
uint32_t Crc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return crc ^ 0xFFFFFFFFu;
}

std::string BigEndian32(uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
          static_cast<char>(value >> 8), static_cast<char>(value)};
}

// The mark: the tEXt chunk "Software\0rotor", with its length and CRC.
const std::string& MarkChunk() {
  static const std::string* chunk = [] {
    const std::string data("Software\0rotor", 14);
    const std::string typed = "tEXt" + data;
    return new std::string(BigEndian32(static_cast<uint32_t>(data.size())) +
                           typed + BigEndian32(Crc32(typed)));
  }();
  return *chunk;
}

// Whether `bytes` begin with the PNG signature and an IHDR chunk.
bool BeginsAsPng(const std::string& bytes) {
  return bytes.size() >= kSignatureBytes + kHeaderChunkBytes &&
         bytes.compare(0, kSignatureBytes, kPngSignature, kSignatureBytes) ==
             0 &&
         bytes.compare(kSignatureBytes + 4, 4, "IHDR") == 0;
}

}  // namespace

std::string MarkRotorPlot(const std::string& drawn, const std::string& png) {
  // Not ReadFile: the plot is this command's output, not an input.
  std::ifstream in(drawn, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return "cannot read " + drawn;
  if (!BeginsAsPng(bytes)) return drawn + " is not a PNG file";
  const size_t after_header = kSignatureBytes + kHeaderChunkBytes;
  WriteFileAtomically(png, bytes.substr(0, after_header) + MarkChunk() +
                               bytes.substr(after_header));
  return "";
}

bool IsRotorPlot(const std::string& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      info.st_nlink != 1) {
    return false;
  }
  const size_t length =
      kSignatureBytes + kHeaderChunkBytes + MarkChunk().size();
  std::ifstream in(path, std::ios::binary);
  std::string bytes(length, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  return in.gcount() == static_cast<std::streamsize>(length) &&
         BeginsAsPng(bytes) &&
         bytes.compare(kSignatureBytes + kHeaderChunkBytes, std::string::npos,
                       MarkChunk()) == 0;
}

void CheckPlotOutputFile(const std::string& path, bool force,
                         std::string_view flag) {
  // Every rule but the one for an existing file, which a plot rotor drew
  // passes as if forced.
  CheckOutputFile(path, /*force=*/true, flag);
  std::error_code error;
  ROTOR_CHECK(
      force || !std::filesystem::exists(path, error) || IsRotorPlot(path), flag,
      " ", path,
      " already exists; pass --force to replace it, or name another "
      "file (without --force rotor replaces only a plot it drew "
      "itself, and this file is none)");
}

}  // namespace rotor::train
