// The one rule for what a command may write over (docs/limits.md,
// "Outputs"):
//
// - a path that does not exist: written;
// - an existing regular file: replaced only when the user asked for it
//   (--force), and never when it is an input of the same command;
// - anything else (a folder, a device such as /dev/full, a FIFO, a socket):
//   refused, --force or not. Writes go to a temporary file renamed over the
//   path (train/io/atomic_file.h), which would turn a device into a file.
//
// The inputs of a command are the files its process has read: ReadFile,
// MappedFile and TokenFile note each one by device and inode as they open
// it, so a hard link or a symbolic link to an input is recognised as well.
// So are all the files of a model the command names, read or not
// (NoteModelFilesAsInputs in train/checkpoint.h).
#ifndef ROTOR_TRAIN_IO_OUTPUT_FILE_H_
#define ROTOR_TRAIN_IO_OUTPUT_FILE_H_

#include <string>
#include <string_view>

namespace rotor::train {

// Records the open file `fd` as an input of this process.
void NoteInputFile(int fd);

// Records the file at `path` (followed through symbolic links), if there is
// one, as an input although this process does not read it: a file of a
// model the command names (its weights beside the config it reads).
void NoteInputPath(const std::string& path);

// Whether `path` (followed through symbolic links) is a file this process
// has read.
bool IsInputFile(const std::string& path);

// What `path` (followed through symbolic links) is when it exists and is
// not a regular file: "a folder", "a device", "a FIFO" or "a socket"; ""
// for a regular file or a path that does not exist. For messages about a
// file that must be a regular one (config.json, tokenizer.json).
std::string NonRegularFileKind(const std::string& path);

// Throws rotor::Error, naming `flag` (e.g. "--logits") and `path`, unless
// `path` may be written under the rule above. Call it before the slow work
// (to fail early) and again just before writing (the inputs read since are
// then known).
void CheckOutputFile(const std::string& path, bool force,
                     std::string_view flag);

// A folder a command reads, for CheckOutputDirOutside's message.
struct InputFolder {
  std::string path;
  std::string what;  // e.g. "the data folder"
  std::string key;   // the key that names it, e.g. "data.path"
  std::string harm;  // what writing there would do
};

// The same rule for a command's output folder: throws rotor::Error, naming
// `config_file` and both folders, when `output_dir` is `input.path` or lies
// inside it (followed through symbolic links), e.g. "run.yaml: output_dir
// runs/d is the data folder runs/d (data.path): the run's checkpoints and
// metrics would go into its data; name another folder, e.g. runs/NAME".
// A data folder is replaced whole by `rotor prepare --force`.
void CheckOutputDirOutside(const std::string& config_file,
                           const std::string& output_dir,
                           const InputFolder& input);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_OUTPUT_FILE_H_
