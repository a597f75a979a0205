// rotor's mark on the plots it draws, by which it knows them again: a PNG
// tEXt chunk "Software" = "rotor" right after the header chunk (IHDR), a
// standard PNG keyword that image viewers show as the file's software. A
// command that draws a plot at a default path (rotor eval's
// ppl_by_length.png and passkey.png) may then be run again: it replaces a
// plot rotor drew, and never a user's file (CheckPlotOutputFile).
#ifndef ROTOR_TRAIN_IO_PLOT_MARK_H_
#define ROTOR_TRAIN_IO_PLOT_MARK_H_

#include <string>
#include <string_view>

namespace rotor::train {

// Writes the PNG file `drawn` (as gnuplot wrote it) to `png` with the mark
// added, atomically (a temporary file renamed over `png`, so a symbolic
// link there is replaced, not written through). Returns "" on success,
// else the reason (e.g. "DRAWN is not a PNG file").
std::string MarkRotorPlot(const std::string& drawn, const std::string& png);

// Whether `path` itself (not followed: a symbolic link is no plot rotor
// drew, nor a file with another hard link, whose other name rotor never
// wrote) is a regular file whose first chunk after the header is the mark.
// Reads only its first bytes, and does not count it as an input of the
// command (train/io/output_file.h).
bool IsRotorPlot(const std::string& path);

// CheckOutputFile(path, force, flag) for a plot: an existing plot rotor
// drew (IsRotorPlot) is replaced as with --force; any other existing file
// is refused without --force, the message saying that it is no plot rotor
// drew. Inputs, folders and devices are refused as by CheckOutputFile.
void CheckPlotOutputFile(const std::string& path, bool force,
                         std::string_view flag);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_PLOT_MARK_H_
