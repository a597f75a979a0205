#include "train/io/weights_hash.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "train/io/mapped_file.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rotor::train {

namespace {

std::string HashText(XXH64_hash_t hash) {
  char text[32];
  std::snprintf(text, sizeof(text), "xxh3-64:%016llx",
                static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace

std::string WeightsHash(
    const std::vector<std::pair<std::string, Tensor>>& tensors) {
  XXH3_state_t* state = XXH3_createState();
  ROTOR_CHECK(state != nullptr, "WeightsHash: out of memory");
  XXH3_64bits_reset(state);
  const auto add = [state](const void* data, size_t bytes) {
    XXH3_64bits_update(state, data, bytes);
  };
  for (const auto& [name, tensor] : tensors) {
    ROTOR_CHECK(tensor.is_contiguous(), "WeightsHash: tensor ", name,
                " is not contiguous");
    const uint64_t name_length = name.size();
    add(&name_length, sizeof(name_length));
    add(name.data(), name.size());
    const int64_t dims = tensor.dim();
    add(&dims, sizeof(dims));
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t size = tensor.size(d);
      add(&size, sizeof(size));
    }
    add(tensor.data(), static_cast<size_t>(tensor.numel()) * sizeof(float));
  }
  const XXH64_hash_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return HashText(hash);
}

std::string FilesHash(const std::vector<std::string>& paths) {
  XXH3_state_t* state = XXH3_createState();
  ROTOR_CHECK(state != nullptr, "FilesHash: out of memory");
  XXH3_64bits_reset(state);
  for (const std::string& path : paths) {
    const std::string name = std::filesystem::path(path).filename().string();
    const MappedFile file(path);
    for (const std::string_view part : {std::string_view(name), file.bytes()}) {
      const uint64_t length = part.size();
      XXH3_64bits_update(state, &length, sizeof(length));
      XXH3_64bits_update(state, part.data(), part.size());
    }
  }
  const XXH64_hash_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return HashText(hash);
}

std::string TextHash(std::string_view text) {
  return HashText(XXH3_64bits(text.data(), text.size()));
}

}  // namespace rotor::train
