#include "sandbox/docker/stream_demux.h"

#include <algorithm>

namespace sandbox::docker {

void StreamDemux::feed(std::string_view bytes, std::string& out_stdout, std::string& out_stderr) {
  while (!bytes.empty()) {
    if (payload_left_ == 0) {
      const std::size_t take = std::min(kHeaderBytes - header_filled_, bytes.size());
      std::copy_n(bytes.begin(), take,
                  header_.begin() + static_cast<std::ptrdiff_t>(header_filled_));
      header_filled_ += take;
      bytes.remove_prefix(take);
      if (header_filled_ < kHeaderBytes) return;
      header_filled_ = 0;
      if (header_[0] > static_cast<unsigned char>(StreamId::kStderr)) {
        throw DemuxError("attach stream record has unknown stream id " +
                         std::to_string(header_[0]) +
                         " (was the container created with Tty=true?)");
      }
      current_ = static_cast<StreamId>(header_[0]);
      payload_left_ = (std::size_t{header_[4]} << 24U) | (std::size_t{header_[5]} << 16U) |
                      (std::size_t{header_[6]} << 8U) | std::size_t{header_[7]};
      continue;  // a zero-size record is legal: go straight to the next header
    }
    const std::size_t take = std::min(payload_left_, bytes.size());
    // stdin records never come from the engine; treat them as stdout like the Docker CLI does.
    std::string& sink = current_ == StreamId::kStderr ? out_stderr : out_stdout;
    sink.append(bytes.substr(0, take));
    payload_left_ -= take;
    bytes.remove_prefix(take);
  }
}

}  // namespace sandbox::docker
