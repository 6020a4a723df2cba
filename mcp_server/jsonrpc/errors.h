// JSON-RPC 2.0 error codes and the exception handlers throw for protocol faults.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace jsonrpc {

enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

// Thrown by method handlers; the dispatcher turns it into an error response. Tool failures are
// not protocol faults and never use this (they are results with isError: true).
class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message, nlohmann::json data = nullptr)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}

  [[nodiscard]] int code() const noexcept { return code_; }
  [[nodiscard]] const nlohmann::json& data() const noexcept { return data_; }

 private:
  int code_;
  nlohmann::json data_;
};

}  // namespace jsonrpc
