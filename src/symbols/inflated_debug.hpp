// Separate debug files whose DWARF is compressed (SHF_COMPRESSED, as Debian's -dbg packages ship
// them), handed to libdw inflated. libdw inflates every debug section it knows when it opens such
// a file, with zlib, at each process's first look at it: about 10 MB and 20 to 50 ms for the C
// library's, for the lines of a frame or two. Here the file is inflated once with libdeflate
// (without the sections the symbolizer never reads) into a copy that is kept by build id in a
// cache directory; later processes map the copy.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <string>
#include <vector>

struct libdeflate_decompressor;

namespace hotscope::symbols {

class InflatedDebugFiles {
public:
  // `debug_directories`: where debug files are looked for by build id (':'-separated, as libdw
  // takes them); `cache_directory`: where inflated copies are kept, "" for none.
  InflatedDebugFiles(std::string debug_directories, std::string cache_directory);
  ~InflatedDebugFiles();
  InflatedDebugFiles(const InflatedDebugFiles&) = delete;
  InflatedDebugFiles& operator=(const InflatedDebugFiles&) = delete;

  // A Dwfl_Callbacks::find_debuginfo for modules whose userdata points at an InflatedDebugFiles:
  // the inflated debug file when the one found by build id is compressed, else what libdw's
  // dwfl_build_id_find_debuginfo finds (an uncompressed file, a dwz file).
  static int find_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name,
                            Dwarf_Addr base, const char* file_name, const char* debuglink_file,
                            GElf_Word debuglink_crc, char** debuginfo_file_name);

  // How the compressed debug files were opened so far.
  std::size_t from_cache() const { return from_cache_; }
  std::size_t inflated() const { return inflated_; }
  // One line per problem met since the last call (the cache could not be written), for the
  // caller to show; each cache directory's problem is reported once.
  std::vector<std::string> take_problems();

private:
  int open_inflated(Dwfl_Module* module, char** debuginfo_file_name);
  int open_cached(const std::string& path, const std::string& build_id) const;
  void keep(const std::string& path, int inflated_fd);

  std::string debug_directories_;
  std::string cache_directory_;
  libdeflate_decompressor* decompressor_ = nullptr;
  std::size_t from_cache_ = 0;
  std::size_t inflated_ = 0;
  bool cache_failed_ = false;
  std::vector<std::string> problems_;
};

} // namespace hotscope::symbols
