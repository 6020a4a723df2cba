// Sends one checked request upstream with libcurl and streams the answer into a ResponseSink as
// it arrives. Never follows redirects (a 3xx goes back to the client, which can only follow it
// through the sidecar, and so through the policy again), no proxy, http/https only, connects
// only to the pinned address. Thread-safety: forwardUpstream blocks for the whole exchange;
// call it on a worker thread, never on the io_context thread. Calls on different threads are
// independent (one easy handle each; curl_global_init must have run).
#pragma once

#include <cstdint>
#include <string>

#include "policy/policy.h"
#include "sidecar/extra_ca.h"
#include "sidecar/header_filter.h"
#include "sidecar/response_sink.h"

namespace sidecar {

struct ForwardRequest {
  policy::Url url;
  std::string curl_resolve;  // "host:port:addr" pin, empty for IP-literal hosts
  std::string method;
  HeaderList headers;  // already filtered (filterRequestHeaders)
  std::string body;
  const ExtraCaCertificates* extra_ca = nullptr;  // trusted besides the system's; may be null
};

struct UpstreamLimits {
  std::int64_t connect_timeout_ms = 10'000;
  std::int64_t idle_timeout_ms = 60'000;  // no byte from the upstream for this long: give up
  std::size_t max_header_bytes = std::size_t{16} * 1024;
};

struct ForwardResult {
  enum class Outcome {
    kCompleted,      // the whole response reached the sink
    kUpstreamError,  // could not connect, bad response, ... (502 if nothing was sent yet)
    kTimedOut,       // connect timeout or idle timeout (504 if nothing was sent yet)
    kClientGone,     // the client left; the upstream request was cancelled
  };
  Outcome outcome = Outcome::kUpstreamError;
  bool head_sent = false;  // the sink got sendHead: too late for an error status
  unsigned status = 0;     // the upstream's status, when it sent one
  std::uint64_t body_bytes = 0;
  std::string error;  // what went wrong, for the client and the audit log
};

[[nodiscard]] ForwardResult forwardUpstream(const ForwardRequest& request,
                                            const UpstreamLimits& limits, ResponseSink& sink);

}  // namespace sidecar
