#include "owned_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "file_paths.hpp"  // create_temporary

namespace ringtrace::detail {

int create_owned_file(const std::filesystem::path& path, int access) {
  const TemporaryFile file = create_temporary(path.string(), access);
  if (::rename(file.path.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::close(file.fd);
    ::unlink(file.path.c_str());
    throw std::runtime_error("ringtrace: cannot create '" + path.string() + "': " + std::strerror(error));
  }
  return file.fd;
}

bool remove_owned_file(const std::filesystem::path& path, int fd) {
  struct stat named {
  }, mine{};
  if (::lstat(path.c_str(), &named) != 0 || ::fstat(fd, &mine) != 0) return false;
  if (named.st_dev != mine.st_dev || named.st_ino != mine.st_ino) return false;
  return ::unlink(path.c_str()) == 0;
}

}  // namespace ringtrace::detail
