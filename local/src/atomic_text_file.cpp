#include "atomic_text_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace wavepool::local {

absl::Status WriteTextFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(temporary.c_str());
      return absl::InternalError(absl::StrCat("writing ", temporary, " failed"));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return absl::InternalError(absl::StrCat("renaming ", temporary, " to ", path, " failed"));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::local
