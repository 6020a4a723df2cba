#include "transport/body_budget.h"

#include <utility>

namespace transport {

BodyBudget::Reservation::Reservation(Reservation&& other) noexcept
    : owner_(std::move(other.owner_)), bytes_(std::exchange(other.bytes_, 0)) {}

BodyBudget::Reservation& BodyBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::move(other.owner_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void BodyBudget::Reservation::reset() noexcept {
  if (owner_ && bytes_ > 0) owner_->release(bytes_);
  owner_.reset();
  bytes_ = 0;
}

bool BodyBudget::tryReserve(std::size_t bytes, Reservation& out) {
  out.reset();
  if (bytes == 0) return true;
  std::lock_guard lock(mutex_);
  if (bytes > max_bytes_ || in_use_ > max_bytes_ - bytes) return false;
  in_use_ += bytes;
  out = Reservation(shared_from_this(), bytes);
  return true;
}

bool BodyBudget::tryGrow(Reservation& reservation, std::size_t total) {
  if (total <= reservation.bytes_) return true;
  const std::size_t more = total - reservation.bytes_;
  std::lock_guard lock(mutex_);
  if (more > max_bytes_ || in_use_ > max_bytes_ - more) return false;
  in_use_ += more;
  if (!reservation.owner_) reservation.owner_ = shared_from_this();
  reservation.bytes_ = total;
  return true;
}

std::size_t BodyBudget::inUse() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void BodyBudget::release(std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  in_use_ -= bytes;
}

}  // namespace transport
