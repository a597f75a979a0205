// Crash-safe file output: a reader sees either the old file or the complete
// new one, never half a file.
//
// The recipe (POSIX): write a temporary file in the same directory, fsync it,
// rename(2) it over the destination (atomic within one file system), then
// fsync the directory so the rename itself is durable. A failure at any point
// removes the temporary file and leaves the destination untouched.
//
//   AtomicFileWriter out("run/model.safetensors");
//   out.Write(header.data(), header.size());
//   out.Write(weights, bytes);
//   out.Commit();                 // without Commit, the destructor discards
//
// Whole directories (a checkpoint: weights, optimizer state, config) are
// replaced with ReplaceDirectoryAtomically: the caller fills a fresh
// DIR.tmp-XXXXXX, which then takes DIR's place.
#ifndef ROTOR_TRAIN_IO_ATOMIC_FILE_H_
#define ROTOR_TRAIN_IO_ATOMIC_FILE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace rotor::train {

class AtomicFileWriter {
 public:
  // Creates `path`.tmp-XXXXXX next to `path` and holds an flock on it until
  // it is renamed or removed (made again if another writer's cleanup
  // removed it before it was locked), then removes the leftovers of
  // writers of `path` that were killed (RemoveStaleTemporaryFiles). Throws
  // rotor::Error (naming the path and the system error) if the directory
  // is not writable.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();  // removes the temporary file unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(const void* data, size_t size);
  void Write(std::string_view data) { Write(data.data(), data.size()); }
  // fsync, rename over the destination, fsync the directory.
  void Commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `contents` to `path` atomically.
void WriteFileAtomically(const std::string& path, std::string_view contents);

// Appends `data` to `path` (created if missing) completely or not at all:
// when a write fails (a full disk, a file size limit) the file is cut back
// to its old size and rotor::Error names the path and the system error.
void AppendToFile(const std::string& path, std::string_view data);

// Reads a whole file; throws rotor::Error naming the path if it cannot, or
// if it holds more than `max_bytes` bytes (found while reading, so a huge
// file or an endless device costs at most `max_bytes` + 64 KiB of memory).
std::string ReadFile(const std::string& path,
                     size_t max_bytes = static_cast<size_t>(-1));

// Replaces (or creates) directory `dir` with one whose contents `fill`
// writes into the fresh temporary directory it receives (DIR.tmp-XXXXXX, in
// the same parent). If `fill` throws, the temporary directory is removed,
// `dir` is untouched and the exception propagates. Otherwise the new
// directory is swapped in with renameat2(RENAME_EXCHANGE) when `dir` exists
// (one atomic step; readers never see a missing `dir`), or renamed when it
// does not; the old contents are then deleted, and a failure to delete
// them is an error naming the folder that holds them. Before filling (when
// `dir` exists) and after, it removes the leftovers of calls for the same
// `dir` that were killed (RemoveStaleTemporaryDirectories); while `fill`
// runs it holds an flock on its temporary folder, so no other process takes
// that folder for a leftover.
void ReplaceDirectoryAtomically(
    const std::string& dir,
    const std::function<void(const std::string& temp_dir)>& fill);

// Removes what ReplaceDirectoryAtomically(dir) calls killed before they
// finished left next to `dir`: DIR.tmp-XXXXXX (half filled) and
// DIR.tmp-XXXXXX.old (the old contents, from the fallback swap). Only while
// `dir` itself exists (otherwise a leftover may hold its only copy), and
// never a folder a running call is still filling (it holds a lock on it).
// Best effort: a leftover that cannot be removed is tried again next time.
void RemoveStaleTemporaryDirectories(const std::string& dir);

// Removes what AtomicFileWriter(path) writers killed before they committed
// left next to `path`: files PATH.tmp-XXXXXX as mkostemp makes them (six
// characters from [A-Za-z0-9], a regular file of this user, mode 0600),
// except `own_temporary` and those a live writer still holds an flock on.
// Anything else (a FIFO or device of that name is not even opened) stays.
// Such a file is never the only copy of anything (the rename that would
// have made it `path` did not happen), so it goes whether `path` exists or
// not. Best effort: one that cannot be removed is tried again next time.
void RemoveStaleTemporaryFiles(const std::string& path,
                               const std::string& own_temporary);

// PATH.tmp-XXXXXX: the mkostemp/mkdtemp template of the temporaries of
// `path` (AtomicFileWriter's, ReplaceDirectoryAtomically's, the probe of
// CheckOutputFile), whose form RemoveStaleTemporaryFiles relies on.
std::string TemporaryTemplate(const std::string& path);

// fsync a directory so renames/creations inside it survive a crash.
void SyncDirectory(const std::string& dir);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_ATOMIC_FILE_H_
