#include "train/io/output_file.h"

#include <fcntl.h>
#include <stdlib.h>  // mkostemp
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <tuple>

#include "core/error.h"
#include "train/io/atomic_file.h"

namespace rotor::train {
namespace {

// A file as it was read. The modification time tells a new file that
// reuses the inode of a deleted input from that input.
using FileId = std::tuple<dev_t, ino_t, int64_t>;

FileId IdOf(const struct stat& info) {
  return {info.st_dev, info.st_ino,
          int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec};
}

struct InputFiles {
  std::mutex mutex;
  std::set<FileId> ids;
};

InputFiles& Inputs() {
  static InputFiles* inputs = new InputFiles;  // never destroyed
  return *inputs;
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void NoteInput(const struct stat& info) {
  InputFiles& inputs = Inputs();
  const std::lock_guard<std::mutex> lock(inputs.mutex);
  inputs.ids.insert(IdOf(info));
}

}  // namespace

void NoteInputFile(int fd) {
  struct stat info;
  if (::fstat(fd, &info) == 0) NoteInput(info);
}

void NoteInputPath(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) NoteInput(info);
}

bool IsInputFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return false;
  InputFiles& inputs = Inputs();
  const std::lock_guard<std::mutex> lock(inputs.mutex);
  return inputs.ids.count(IdOf(info)) > 0;
}

std::string NonRegularFileKind(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return "";
  return KindOf(info.st_mode);
}

void CheckOutputFile(const std::string& path, bool force,
                     std::string_view flag) {
  struct stat info;
  // A symbolic link is judged by what it points to (a dangling one is new).
  if (::lstat(path.c_str(), &info) != 0 ||
      (S_ISLNK(info.st_mode) && ::stat(path.c_str(), &info) != 0)) {
    // A new file: its folder must take one (not so under /proc, in a
    // read-only mount or a missing folder), found now rather than after
    // the work; the file is written as path.tmp-XXXXXX, as this probe.
    std::string probe = TemporaryTemplate(path);
    const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
    ROTOR_CHECK(fd >= 0, flag, " ", path, ": cannot create a file there (",
                std::strerror(errno), ")");
    ::close(fd);
    ::unlink(probe.c_str());
    return;
  }
  ROTOR_CHECK(S_ISREG(info.st_mode), flag, " ", path, " is ",
              KindOf(info.st_mode),
              "; rotor writes only regular files (name a new file)");
  ROTOR_CHECK(!IsInputFile(path), flag, " ", path,
              " is an input of this command; name another file");
  ROTOR_CHECK(force, flag, " ", path,
              " already exists; pass --force to replace it");
}

void CheckOutputDirOutside(const std::string& config_file,
                           const std::string& output_dir,
                           const InputFolder& input) {
  if (input.path.empty()) return;
  namespace fs = std::filesystem;
  // Absolute, through links, without a trailing separator.
  auto resolved = [](const std::string& path) {
    std::error_code error;
    const fs::path full = fs::weakly_canonical(path, error);
    return error ? fs::path() : full.has_filename() ? full : full.parent_path();
  };
  const fs::path output = resolved(output_dir);
  const fs::path folder = resolved(input.path);
  if (output.empty() || folder.empty()) return;
  // `folder`'s components must begin `output`'s.
  auto output_part = output.begin();
  for (const fs::path& part : folder) {
    if (output_part == output.end() || *output_part != part) return;
    ++output_part;
  }
  const bool inside = output_part != output.end();
  throw Error(StrCat(config_file, ": output_dir ", output_dir,
                     inside ? " is inside " : " is ", input.what, " ",
                     input.path, " (", input.key, "): ", input.harm,
                     "; name another folder, e.g. runs/NAME"));
}

}  // namespace rotor::train
