// Writing output files safely: every writer (result JSON, trace, calibration profile) checks its
// path before any work, never replaces anything but a regular file, follows symbolic links to
// their target, never writes over one of the run's inputs, and writes through a unique
// temporary file beside the target that is renamed over it only when complete.
#pragma once

#include <string>
#include <vector>

namespace overlapsim {

/// The file a path designates: symbolic links followed (even dangling ones), made absolute.
std::string resolve_output_path(const std::string& path);

/// Throws InputError naming `flag` and the path unless `path` can be written as an output file:
/// it is not empty, its folder exists and is writable, it is not a directory, a device or another
/// non-regular file, and it is not the same file as any of `inputs`.
void check_output_path(const std::string& path, const std::string& flag, const std::vector<std::string>& inputs = {});

/// A new, empty, uniquely named file in the folder of `target` (for a write-then-rename), with
/// the mode a new file gets (0666 less the umask). Until commit_temp() or discard_temp(), it is
/// removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP). Throws InputError naming
/// `flag` if it cannot be created.
std::string create_temp_beside(const std::string& target, const std::string& flag);
/// Ends a write through `tmp`: if `written`, renames it over `target`; else, or if the rename
/// fails, removes it and throws InputError naming `path` and `flag` ("write failed", "cannot
/// replace the file"). Nothing is left behind.
void commit_temp(const std::string& tmp, const std::string& target, bool written, const std::string& path,
                 const std::string& flag);
/// Removes an unfinished temporary file.
void discard_temp(const std::string& tmp);

/// check_output_path(path, flag), then writes `content` through a temporary file renamed over
/// the target. On failure nothing is left behind and InputError names the path and `flag`.
void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag);

}  // namespace overlapsim
