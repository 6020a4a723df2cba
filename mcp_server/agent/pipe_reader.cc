#include "agent/pipe_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace agent {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxDrainBytes = std::size_t{8} * 1024 * 1024;

}  // namespace

PipeReader::PipeReader(EventLoop& loop, UniqueFd fd, DataCallback on_data)
    : loop_(loop), fd_(std::move(fd)), on_data_(std::move(on_data)) {
  loop_.watchFd(fd_.get(), POLLIN, [this](short /*revents*/) {
    // One read per wake-up keeps the loop fair between a flooding child and incoming frames.
    readOnce();
  });
}

PipeReader::~PipeReader() { close(); }

void PipeReader::close() noexcept {
  if (!fd_.valid()) return;
  loop_.unwatchFd(fd_.get());
  fd_.reset();
}

bool PipeReader::readOnce() {
  if (!fd_.valid()) return false;
  char buffer[kChunkBytes];
  const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
  if (n > 0) {
    on_data_(std::string_view(buffer, static_cast<std::size_t>(n)));
    return true;
  }
  if (n < 0 && (errno == EINTR)) return true;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n < 0)
    std::fprintf(stderr, "sandbox-agent: reading a child's output: %s\n", std::strerror(errno));
  close();  // EOF or a hard error: nothing more will come
  return false;
}

void PipeReader::drain() {
  std::size_t budget = kMaxDrainBytes;
  while (budget > 0 && fd_.valid()) {
    if (!readOnce()) break;
    budget = budget > kChunkBytes ? budget - kChunkBytes : 0;
  }
}

}  // namespace agent
