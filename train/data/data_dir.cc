#include "train/data/data_dir.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace rotor::train {

std::string CacheDir() {
  if (const char* dir = std::getenv("ROTOR_CACHE_DIR"); dir && *dir) {
    return dir;
  }
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/rotor";
}

std::string ResolveDataDir(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string dir = path == "brown" ? CacheDir() + "/brown" : path;
  ROTOR_CHECK(
      fs::exists(dir + "/train.bin") && fs::exists(dir + "/val.bin"),
      "data.path '", path, "': ", dir, " has no train.bin/val.bin; ",
      path == "brown"
          ? "run scripts/fetch_brown.sh to download and prepare the "
            "Brown corpus"
          : "prepare it with: rotor prepare --input TEXTS --output " + dir);
  return dir;
}

}  // namespace rotor::train
