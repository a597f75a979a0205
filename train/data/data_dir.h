// Where a run's data lives: data.path names a folder prepared by
// `rotor prepare` (train.bin, val.bin, meta.json), or "brown", the Brown
// corpus that scripts/fetch_brown.sh prepares in the cache folder.
#ifndef ROTOR_TRAIN_DATA_DATA_DIR_H_
#define ROTOR_TRAIN_DATA_DATA_DIR_H_

#include <string>

namespace rotor::train {

// rotor's cache folder: $ROTOR_CACHE_DIR, else ~/.cache/rotor.
std::string CacheDir();

// The folder data.path names ("brown": <cache>/brown; anything else as is).
// Throws, saying how to prepare it, if train.bin or val.bin is missing.
std::string ResolveDataDir(const std::string& path);

// Whether data.path `path` names a prepared folder (ResolveDataDir would
// return it) rather than, say, a folder of text files.
bool HoldsPreparedData(const std::string& path);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_DATA_DIR_H_
