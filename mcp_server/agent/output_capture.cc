#include "agent/output_capture.h"

#include <algorithm>
#include <utility>

namespace agent {
namespace {

// Number of bytes a sequence starting with `lead` should have; 0 for a continuation or invalid
// byte.
std::size_t sequenceLength(unsigned char lead) noexcept {
  if (lead < 0x80U) return 1;
  if ((lead & 0xE0U) == 0xC0U) return 2;
  if ((lead & 0xF0U) == 0xE0U) return 3;
  if ((lead & 0xF8U) == 0xF0U) return 4;
  return 0;
}

}  // namespace

std::size_t completeUtf8PrefixLength(std::string_view bytes) noexcept {
  // Only the last three bytes can belong to an unfinished sequence.
  const std::size_t n = bytes.size();
  const std::size_t lookback = std::min<std::size_t>(n, 3);
  for (std::size_t back = 1; back <= lookback; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0U) == 0x80U) continue;  // continuation byte: keep looking for the lead
    const std::size_t need = sequenceLength(c);
    return (need > back) ? n - back : n;
  }
  return n;
}

std::string_view OutputCapture::append(std::string_view chunk) {
  total_bytes_ += chunk.size();
  if (truncated_) return {};
  const std::size_t room = max_bytes_ - data_.size();
  if (chunk.size() <= room) {
    data_.append(chunk);
    return std::string_view(data_).substr(data_.size() - chunk.size());
  }
  truncated_ = true;
  const std::size_t before = data_.size();
  data_.append(chunk.substr(0, room));
  data_.resize(std::max(before, completeUtf8PrefixLength(data_)));
  return std::string_view(data_).substr(before);
}

std::string Utf8Rechunker::push(std::string_view chunk) {
  pending_.append(chunk);
  const std::size_t complete = completeUtf8PrefixLength(pending_);
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Rechunker::flush() { return std::exchange(pending_, std::string()); }

}  // namespace agent
