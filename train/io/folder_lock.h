// One process at a time in a folder: an exclusive flock(2) on a lock file
// inside it, held for the life of a FolderLock. `rotor train` holds
// OUTPUT_DIR/train.lock while it runs (rank 0 under MPI), so a second run on
// the same output_dir is refused instead of overwriting the first one's
// checkpoints and interleaving its metrics.jsonl.
//
// The kernel drops the lock when the process ends, however it ends (a crash,
// SIGKILL), so a lock file left by a dead run never blocks the next one. The
// file stays, empty: it is never written (a refused run changes nothing),
// and the holder's pid comes from /proc/locks.
#ifndef ROTOR_TRAIN_IO_FOLDER_LOCK_H_
#define ROTOR_TRAIN_IO_FOLDER_LOCK_H_

#include <string>

namespace rotor::train {

class FolderLock {
 public:
  // Locks `dir`/`file` (creating it if missing) without waiting. Throws
  // rotor::Error "WHAT DIR is in use by pid N" when another process holds
  // it, or naming the system error when the file cannot be opened.
  FolderLock(const std::string& dir, const std::string& file,
             const std::string& what);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_FOLDER_LOCK_H_
