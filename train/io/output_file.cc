#include "train/io/output_file.h"

#include <sys/stat.h>

#include <mutex>
#include <set>
#include <utility>

#include "core/error.h"

namespace rotor::train {
namespace {

using FileId = std::pair<dev_t, ino_t>;

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

}  // namespace

void NoteInputFile(int fd) {
  struct stat info;
  if (::fstat(fd, &info) != 0) return;
  InputFiles& inputs = Inputs();
  const std::lock_guard<std::mutex> lock(inputs.mutex);
  inputs.ids.insert({info.st_dev, info.st_ino});
}

bool IsInputFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return false;
  InputFiles& inputs = Inputs();
  const std::lock_guard<std::mutex> lock(inputs.mutex);
  return inputs.ids.count({info.st_dev, info.st_ino}) > 0;
}

void CheckOutputFile(const std::string& path, bool force,
                     std::string_view flag) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) return;  // a new file
  // A symbolic link is judged by what it points to (a dangling one is new).
  if (S_ISLNK(info.st_mode) && ::stat(path.c_str(), &info) != 0) return;
  ROTOR_CHECK(S_ISREG(info.st_mode), flag, " ", path, " is ",
              KindOf(info.st_mode),
              "; rotor writes only regular files (name a new file)");
  ROTOR_CHECK(!IsInputFile(path), flag, " ", path,
              " is an input of this command; name another file");
  ROTOR_CHECK(force, flag, " ", path,
              " already exists; pass --force to replace it");
}

}  // namespace rotor::train
