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

namespace {

// The folder data.path names.
std::string DataDirOf(const std::string& path) {
  return path == "brown" ? CacheDir() + "/brown" : path;
}

// How to make the token files data.path `dir` lacks. A folder that already
// holds files is most likely the text itself, which rotor prepare must not
// write into: it gets another folder, data/NAME.
std::string HowToPrepare(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  const bool holds_files = fs::is_directory(dir, error) &&
                           !fs::is_empty(dir, error) && !error &&
                           !fs::exists(dir + "/train.bin", error) &&
                           !fs::exists(dir + "/val.bin", error);
  if (!holds_files) {
    return "prepare it with: rotor prepare --input TEXTS --output " + dir;
  }
  fs::path name = fs::path(dir).filename();
  if (name.empty() || name == "." || name == "..") {
    name = fs::path(dir).lexically_normal().parent_path().filename();
  }
  const std::string output =
      "data/" +
      (name.empty() || name == ".." ? std::string("mine") : name.string());
  return "if it holds your text files, prepare them into another folder: "
         "rotor prepare --input " +
         dir + " --output " + output + ", then train with data.path=" + output;
}

}  // namespace

bool HoldsPreparedData(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string dir = DataDirOf(path);
  std::error_code error;
  return fs::exists(dir + "/train.bin", error) &&
         fs::exists(dir + "/val.bin", error);
}

std::string ResolveDataDir(const std::string& path) {
  const std::string dir = DataDirOf(path);
  ROTOR_CHECK(HoldsPreparedData(path), "data.path '", path, "': ", dir,
              " has no train.bin/val.bin; ",
              path == "brown" ? "run scripts/fetch_brown.sh to download and "
                                "prepare the Brown corpus"
                              : HowToPrepare(dir));
  return dir;
}

}  // namespace rotor::train
