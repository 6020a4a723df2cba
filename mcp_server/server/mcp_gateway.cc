#include "server/mcp_gateway.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sandbox/backend.h"
#include "server/session_egress.h"

namespace server {
namespace {

// The operator's CA file, copied into the session directory where the relay (a container that
// sees only that directory) reads it: world-readable, it holds certificates only.
void copyCaFile(const std::string& from, const std::string& to, const std::string& setting) {
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) throw sandbox::SandboxError("cannot copy " + setting + " " + from + ": " + ec.message());
  std::filesystem::permissions(
      to,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::group_read | std::filesystem::perms::others_read,
      ec);
}

std::string allowlistText(const policy::Policy& policy) {
  std::string text;
  for (const auto& rule : policy.rules) {
    if (!text.empty()) text += ", ";
    text += rule.base.toString();
  }
  return text;
}

// The relay reads its rules from files in the session's directory.
void writeRulesFile(const std::string& path, const nlohmann::json& rules) {
  std::ofstream out(path);
  out << rules.dump(2) << '\n';
  out.close();  // a full disk shows up only when the buffer is written out
  if (!out) {
    throw sandbox::SandboxError("cannot write " + path + ": " + std::strerror(errno) +
                                "; the session's sidecar needs space there: free some under "
                                "mcp.runtime_dir, or point it elsewhere");
  }
}

// Secret values: readable by the relay's user only (the session directory's owner), written
// without passing through a world-readable moment.
void writePrivateFile(const std::string& path, const std::string& content,
                      const std::string& owner_of) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw sandbox::SandboxError("cannot create " + path + ": " + std::strerror(errno));
  struct stat owner {};
  bool ok = ::stat(owner_of.c_str(), &owner) == 0 &&
            (::geteuid() != 0 || ::fchown(fd, owner.st_uid, owner.st_gid) == 0);
  std::size_t written = 0;
  while (ok && written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n <= 0)
      ok = false;
    else
      written += static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(path.c_str());
    throw sandbox::SandboxError("cannot write " + path +
                                " for the session's sidecar: " + std::strerror(errno));
  }
}

}  // namespace

void refuseForbidden(const policy::Policy& policy,
                     const std::vector<policy::Endpoint>& server_endpoints) {
  for (const auto& rule : policy.rules) {
    const auto decision = policy::decideForbiddenUrl(rule.base, server_endpoints);
    if (!decision.allowed()) throw policy::PolicyError(rule.id + ": " + decision.reason);
  }
}

std::shared_ptr<const policy::Policy> effectivePolicy(const nlohmann::json& requested,
                                                      const nlohmann::json& operator_allowlist) {
  try {
    auto wanted = policy::loadPolicy(requested);
    std::shared_ptr<const policy::Policy> effective;
    if (operator_allowlist.empty()) {
      policy::requirePublicHosts(*wanted);  // egress to special hosts is the operator's to grant
      effective = std::move(wanted);
    } else {
      effective = policy::narrow(*policy::loadPolicy(operator_allowlist), *wanted);
    }
    refuseForbidden(*effective, {});
    return effective;
  } catch (const policy::PolicyError& e) {
    std::string message = std::string("mcp_allowlist: ") + e.what();
    if (!operator_allowlist.empty()) {
      message +=
          ". This server allows only: " + allowlistText(*policy::loadPolicy(operator_allowlist));
    }
    throw sandbox::SandboxError(message);
  }
}

McpGateway::McpGateway(sandbox::SidecarLauncher& launcher,
                       std::unique_ptr<sandbox::ScopedDirectory> directory,
                       const std::string& session_id, std::shared_ptr<const policy::Policy> policy,
                       std::vector<std::string> limit_flags, RetainedAuditLog retained_audit_log,
                       const std::vector<policy::Endpoint>& server_endpoints,
                       const SessionMetrics* metrics,
                       std::shared_ptr<const policy::EgressPolicy> egress,
                       const nlohmann::json& secrets, const std::string& egress_upstream_ca,
                       const std::string& mcp_upstream_ca)
    : launcher_(launcher),
      directory_(std::move(directory)),
      policy_(policy ? std::move(policy) : std::make_shared<const policy::Policy>()),
      egress_(egress && !egress->rules.empty() ? std::move(egress) : nullptr),
      retained_audit_log_(std::move(retained_audit_log)),
      metrics_(metrics) {
  spec_.session_id = session_id;
  spec_.directory = directory_->path();
  spec_.socket_dir = spec_.directory + "/sock";
  spec_.policy_file = spec_.directory + "/policy.json";
  spec_.audit_log_file = spec_.directory + "/audit.jsonl";
  spec_.limit_flags = std::move(limit_flags);
  try {
    refuseForbidden(*policy_, server_endpoints);
  } catch (const policy::PolicyError& e) {
    throw sandbox::SandboxError(std::string("mcp_allowlist: ") + e.what());
  }
  // The relay checks them again after DNS, so a name that resolves here is refused too.
  for (const auto& endpoint : server_endpoints) {
    spec_.limit_flags.insert(spec_.limit_flags.end(), {"--deny-endpoint", endpoint.toString()});
  }
  writeRulesFile(spec_.policy_file, policy::toJson(*policy_));
  if (egress_) {
    spec_.egress_rules_file = spec_.directory + "/egress.json";
    writeRulesFile(spec_.egress_rules_file, policy::toJson(*egress_));
  }
  writeSecrets(secrets, egress_upstream_ca);
  if (servesMcp() && !mcp_upstream_ca.empty()) {
    spec_.upstream_ca_file = spec_.directory + "/mcp-upstream-ca.pem";
    copyCaFile(mcp_upstream_ca, spec_.upstream_ca_file, "mcp.upstream_ca_file");
  }
}

void McpGateway::writeSecrets(const nlohmann::json& secrets, const std::string& upstream_ca) {
  if (secrets.empty()) return;
  spec_.secrets_file = spec_.directory + "/secrets.json";
  writePrivateFile(spec_.secrets_file, secrets.dump(), spec_.directory);
  for (const auto& entry : secrets) {
    const auto host = entry.at("host").get<std::string>();
    const auto port = entry.at("port").get<int>();
    secret_hosts_.push_back(host + ":" + std::to_string(port));
    // The relay's proxy intercepts (and its CA covers) only the secret hosts its rules reach
    // (SecretHeaders::reachableThrough); the sandbox is told to trust the CA only then.
    const auto url = policy::parseUrl("https://" + host + ":" + std::to_string(port) + "/");
    if (egress_ && url.url && policy::findEgressRule(*egress_, *url.url) != nullptr) {
      intercepts_tls_ = true;
    }
  }
  if (upstream_ca.empty() || !egress_) return;
  spec_.egress_upstream_ca_file = spec_.directory + "/upstream-ca.pem";
  copyCaFile(upstream_ca, spec_.egress_upstream_ca_file, "egress.upstream_ca_file");
}

void McpGateway::start() {
  std::lock_guard lock(mutex_);
  sidecar_ = launcher_.launch(spec_);
  if (servesMcp()) {
    spdlog::warn("session {}: code may reach these MCP servers through sidecar {}: {}",
                 spec_.session_id, sidecar_->describe(), allowlistText(*policy_));
  }
  if (egress_) {
    spdlog::warn(
        "session {}: code may reach these hosts through the egress proxy of sidecar {}: {}",
        spec_.session_id, sidecar_->describe(), egressRulesText(*egress_));
  }
}

McpGateway::~McpGateway() {
  std::lock_guard lock(mutex_);
  sidecar_.reset();  // before the directory goes, and so the log is complete
  try {
    refreshTally();  // the last lines count too
  } catch (const std::exception&) {
    // Only the metrics miss them; the retained log below still gets them.
  }
  retainAuditLog();
}

void McpGateway::retainAuditLog() noexcept {
  const std::string& path = retained_audit_log_.path;
  if (path.empty()) return;
  // Sessions end concurrently: one appender at a time keeps their lines whole.
  static std::mutex append_mutex;
  const std::lock_guard lock(append_mutex);
  std::error_code ec;
  const auto adding = std::filesystem::file_size(spec_.audit_log_file, ec);
  const auto have = std::filesystem::file_size(path, ec);
  if (!ec && have > 0 &&
      have + (adding == static_cast<std::uintmax_t>(-1) ? 0 : adding) >
          retained_audit_log_.max_bytes) {
    std::filesystem::rename(path, path + ".1", ec);  // one old generation is kept
    spdlog::info("mcp.audit_log {} reached mcp.audit_log_max_bytes ({}); rotated to {}.1", path,
                 retained_audit_log_.max_bytes, path);
  }
  std::ifstream in(spec_.audit_log_file, std::ios::binary);
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out) {
    spdlog::error("session {}: cannot append its audit log to {} (mcp.audit_log)", spec_.session_id,
                  path);
    return;
  }
  if (in && in.peek() != std::ifstream::traits_type::eof()) out << in.rdbuf();
}

std::optional<std::string> McpGateway::ensureRunning() {
  std::lock_guard lock(mutex_);
  if (sidecar_ && sidecar_->running()) return std::nullopt;
  const std::string was = sidecar_ ? sidecar_->describe() : std::string("the relay");
  sidecar_.reset();
  spdlog::warn("session {}: MCP sidecar {} stopped; restarting it", spec_.session_id, was);
  try {
    sidecar_ = launcher_.launch(spec_);
  } catch (const sandbox::SandboxError& e) {
    throw sandbox::SandboxError(
        std::string("this session's MCP sidecar stopped and could not be restarted (") + e.what() +
        "). Code in this session cannot reach MCP servers; start a new session with the same "
        "mcp_allowlist to try again.");
  }
  ++restarts_;
  return "The session's MCP sidecar (" + was + ") had stopped and was restarted as " +
         sidecar_->describe() +
         "; MCP connections opened before are gone, so call connect() again.";
}

std::uint64_t McpGateway::auditDropped() const {
  // The relay keeps the count of lines its size-capped log dropped next to it
  // (sidecar/audit_log.h).
  std::ifstream in(spec_.audit_log_file + ".dropped");
  std::uint64_t count = 0;
  return (in >> count) ? count : 0;
}

void McpGateway::refreshTally() {
  std::ifstream in(spec_.audit_log_file, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(audit_offset_));
  std::string chunk(std::size_t{64} * 1024, '\0');
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    tally_.consume(std::string_view(chunk.data(), got));
    audit_offset_ += got;
  }
  const auto& egress = tally_.egress();
  if (metrics_ != nullptr) {
    metrics_->sidecarDecisions(tally_.allowed() - counted_allowed_,
                               tally_.denied() - counted_denied_,
                               tally_.errors() - counted_errors_);
    metrics_->egressDecisions(
        egress.allowed - counted_egress_.allowed, egress.denied - counted_egress_.denied,
        egress.errors - counted_egress_.errors, egress.bytes_up - counted_egress_.bytes_up,
        egress.bytes_down - counted_egress_.bytes_down);
  }
  counted_allowed_ = tally_.allowed();
  counted_denied_ = tally_.denied();
  counted_errors_ = tally_.errors();
  counted_egress_ = egress;
}

std::vector<std::string> McpGateway::takeEgressRefusals() {
  std::lock_guard lock(mutex_);
  if (!egress_) return {};
  refreshTally();
  return tally_.takeEgressRefusals();
}

void McpGateway::refreshCounts() {
  std::lock_guard lock(mutex_);
  refreshTally();
}

nlohmann::json McpGateway::stats() {
  std::lock_guard lock(mutex_);
  refreshTally();
  nlohmann::json out = {{"allowlist", policy::toJson(*policy_)},
                        {"sidecar",
                         {{"mode", launcher_.mode()},
                          {"relay", sidecar_ ? sidecar_->describe() : std::string()},
                          {"running", sidecar_ && sidecar_->running()},
                          {"restarts", restarts_},
                          {"allowed", tally_.allowed()},
                          {"denied", tally_.denied()},
                          {"errors", tally_.errors()},
                          {"audit_dropped", auditDropped()}}},
                        {"secret_hosts", secret_hosts_}};
  if (egress_) {
    const auto& egress = tally_.egress();
    out["egress"] = {{"allow", egressRulesText(*egress_)},
                     {"allowed", egress.allowed},
                     {"denied", egress.denied},
                     {"errors", egress.errors},
                     {"bytes_up", egress.bytes_up},
                     {"bytes_down", egress.bytes_down}};
  }
  return out;
}

}  // namespace server
