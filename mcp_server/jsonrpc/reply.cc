#include "jsonrpc/reply.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "jsonrpc/dispatcher.h"
#include "jsonrpc/errors.h"

namespace jsonrpc {

json respond(const json& id, const std::string& method, const std::function<json()>& produce) {
  try {
    return makeResult(id, produce());
  } catch (const Error& e) {
    return makeError(id, e.code(), e.what(), e.data());
  } catch (const json::exception& e) {
    return makeError(id, kInvalidParams, std::string("Invalid params: ") + e.what());
  } catch (const std::exception& e) {
    spdlog::error("{} failed: {}", method, e.what());
    return makeError(id, kInternalError, std::string("Internal error: ") + e.what());
  }
}

Reply::~Reply() {
  if (answered()) return;
  spdlog::error("{}: a deferred answer was dropped unanswered", method_);
  deliver(makeError(id_, kInternalError,
                    "Internal error: the server lost track of this request; send it again"));
}

void Reply::complete(const std::function<json()>& produce) noexcept {
  if (answered()) return;
  deliver(respond(id_, method_, produce));
}

void Reply::drop() noexcept { deliver(std::nullopt); }

bool Reply::answered() const {
  std::lock_guard lock(mutex_);
  return !deliver_;
}

void Reply::deliver(std::optional<json> response) noexcept {
  Deliver deliver;
  {
    std::lock_guard lock(mutex_);
    deliver.swap(deliver_);
  }
  if (!deliver) return;
  try {
    deliver(std::move(response));
  } catch (const std::exception& e) {
    spdlog::error("{}: delivering a deferred answer failed: {}", method_, e.what());
  }
}

}  // namespace jsonrpc
