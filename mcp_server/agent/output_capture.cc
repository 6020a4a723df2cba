#include "agent/output_capture.h"

#include <algorithm>
#include <utility>

#include "common/utf8.h"

namespace agent {

std::string_view OutputCapture::append(std::string_view chunk) {
  total_bytes_ += chunk.size();
  if (truncated_) {
    if (spill_) spill_->write(chunk);
    return {};
  }
  const std::size_t room = max_bytes_ - data_.size();
  if (chunk.size() <= room) {
    data_.append(chunk);
    return std::string_view(data_).substr(data_.size() - chunk.size());
  }
  truncated_ = true;
  if (spill_) {  // everything so far is in data_, untrimmed: the file gets the stream whole
    spill_->write(data_);
    spill_->write(chunk);
  }
  const std::size_t before = data_.size();
  data_.append(chunk.substr(0, room));
  data_.resize(std::max(before, common::completeUtf8PrefixLength(data_)));
  return std::string_view(data_).substr(before);
}

std::string Utf8Rechunker::push(std::string_view chunk) {
  pending_.append(chunk);
  const std::size_t complete = common::completeUtf8PrefixLength(pending_);
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Rechunker::flush() { return std::exchange(pending_, std::string()); }

}  // namespace agent
