// sandbox-mcp configuration: one struct, units in field names, loaded from JSON. Every field has a
// default, so an empty file (or none) is a complete, secure configuration. Immutable after load.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AllowedHostDir {
  std::string path;       // host directory (absolute); volumes may mount it or anything below it
  bool allow_rw = false;  // whether a volume may ask for mode "rw" here
};

// Client certificate for a tcp:// engine (dockerd --tlsverify): the engine is checked against
// ca_file (and must be issued for the host docker.host names), and presents cert_file/key_file.
// Absolute paths of PEM files; all three empty: no TLS (unix:// engines only).
struct DockerTlsConfig {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;

  [[nodiscard]] bool empty() const noexcept {
    return ca_file.empty() && cert_file.empty() && key_file.empty();
  }
};

struct DockerConfig {
  // "unix:///path" (an engine on this host) or "tcp://HOST:PORT" (anywhere; TLS required: an
  // Engine API without client certificates is root on its host for anyone who reaches the port).
  // The legacy docker.socket_path sets the unix:// path. DOCKER_HOST is never read.
  std::string host = "unix:///var/run/docker.sock";
  DockerTlsConfig tls;
  std::string api_version = "v1.41";  // Docker 20.10+ (Debian 12's docker.io)
  std::int64_t request_timeout_ms = 30000;
};

struct SandboxConfig {
  std::string image = "sandbox-mcp/python:latest";
  std::string runtime = "runsc";  // gVisor; "runc" only as a logged, opt-in weakening
  // gVisor's platform: "" takes the engine's runtime `runsc` as scripts/setup.sh registered it
  // (SANDBOX_RUNSC_PLATFORM, systrap unless set); "systrap", "ptrace" or "kvm" use the runtime
  // registered as runsc-<platform>. See engineRuntime().
  std::string platform;
  std::int64_t memory_mib = 512;
  double cpus = 1.0;
  std::int64_t pids_limit = 256;  // runsc counts its own Sentry threads here (DESIGN.md)
  std::int64_t tmp_size_mib = 256;
  std::int64_t workdir_size_mib = 256;
  std::string workdir = "/workspace";
  std::string user = "65534:65534";  // nobody; empty keeps the image's user
  bool read_only_root = true;
  std::string agent_path;  // host path of sandbox-agent; empty = next to the sandbox-mcp binary
  // How frames reach the agent: "socket" (default: a Unix socket per sandbox, bind-mounted from
  // the run-time directory; the engine must run on this host) or "attach" (the engine's attached
  // stdio: slower, works with any engine).
  std::string agent_channel = "socket";
  bool allow_custom_images = true;  // `image` argument accepted (only allowed_images, below)
  bool allow_dockerfile = false;    // `dockerfile` argument: off unless the operator opts in
  // When runsc is not registered with the engine: false (default) refuses sessions; true falls
  // back to runc, a logged weakening.
  bool allow_runc_fallback = false;
  // Images the `image` argument and a Dockerfile's FROM may name: exact references
  // ("repo:tag", "repo" means "repo:latest") or "repo:*" (any tag of repo). Empty: `image` only.
  std::vector<std::string> allowed_images;
  // An image with this label ("key=value") is allowed too; empty: no label allows.
  std::string allowed_image_label;
  // Dockerfile builds (when allow_dockerfile): each RUN runs under build_runtime (gVisor without
  // its root overlay, so the step's changes can be committed), with the sandbox's limits.
  std::string build_runtime = "runsc-build";
  std::int64_t build_timeout_s = 300;           // the whole build, all steps
  std::int64_t build_max_steps = 32;            // instructions in one Dockerfile
  std::int64_t built_images_max = 16;           // built images kept; the least recently used go
  std::int64_t built_image_max_idle_s = 86400;  // a built image unused this long is removed
  std::int64_t build_max_size_mib = 2048;       // bytes all RUN steps of one build may add
};

// The engine runtime sandboxes run under: runsc-<platform> when a platform is chosen, else
// sandbox.runtime.
[[nodiscard]] inline std::string engineRuntime(const SandboxConfig& sandbox) {
  return sandbox.runtime == "runsc" && !sandbox.platform.empty() ? "runsc-" + sandbox.platform
                                                                 : sandbox.runtime;
}

struct ExecutionConfig {
  std::int64_t default_timeout_s = 30;
  std::int64_t max_timeout_s = 600;
  std::int64_t max_output_bytes = 1024LL * 1024;     // per stream, per execution
  std::int64_t max_file_bytes = 32LL * 1024 * 1024;  // upload_file / download_file
  // Executions (run_code, run_shell) running at once, server-wide; past it a call gets a "busy"
  // tool error at once instead of queueing without bound.
  std::int64_t max_concurrent = 64;
  // Of those, how many one client (one MCP session: an HTTP Mcp-Session-Id or the stdio
  // connection) may run at once, so that one client cannot starve the others.
  std::int64_t max_concurrent_per_client = 16;
  // Output past max_output_bytes is saved whole (up to this, per stream) to a file in the sandbox
  // and the result links to it (sandbox://...); 0 drops it. The file lives on the sandbox's /tmp
  // tmpfs, so it counts against the sandbox's memory; the agent keeps the newest 8 such files.
  std::int64_t max_saved_output_bytes = 32LL * 1024 * 1024;
};

// Images a Python cell sends back as MCP image content (figures, display(), _repr_png_): each is
// downscaled until it fits, so that one call cannot flood a model's context; the full-size PNG
// stays in the sandbox (its path and sandbox:// URI are in structuredContent.images).
struct ImagesConfig {
  std::int64_t max_per_call = 8;           // 0: no images are sent
  std::int64_t max_px = 1568;              // longest side of an image sent inline
  std::int64_t max_bytes = 1024LL * 1024;  // PNG bytes of one image sent inline
};

struct ResourcesConfig {
  // Bytes one resources/read returns at most; larger files are read in ranges (?offset=&length=).
  std::int64_t max_read_bytes = 1024LL * 1024;
};

// Task-augmented tools/call (MCP 2025-11-25 tasks): a run returns a task at once and its result is
// fetched later with tasks/result.
struct TasksConfig {
  // Tasks one client (one MCP session) holds, running or finished; past it a new task is refused.
  std::int64_t max_per_client = 32;
  // How long a finished task and its result are kept, from when it finished; a client's requested
  // ttl is clamped to max_ttl_ms.
  std::int64_t default_ttl_ms = 10LL * 60 * 1000;
  std::int64_t max_ttl_ms = 60LL * 60 * 1000;
  std::int64_t poll_interval_ms = 500;  // suggested to clients polling tasks/get
  // How long a 2026-07-28 tools/call with the tasks extension may run before it answers with a
  // task instead: most calls finish within it and answer as usual.
  std::int64_t inline_wait_ms = 1000;
  // Serialized results one client keeps (finished, until fetched and expired), and all clients
  // together. A result that does not fit keeps the first bytes of stdout and stderr; the whole
  // streams are saved in the sandbox and linked (sandbox://...), as for output past the cap.
  std::int64_t max_result_bytes_per_client = 8LL * 1024 * 1024;
  std::int64_t max_result_bytes = 256LL * 1024 * 1024;
  // Serialized notifications (progress, output lines, status changes) of a client's tasks that
  // wait for a tasks/result stream (Streamable HTTP), and of all clients together; past them the
  // client's oldest go first (the result itself stays whole).
  std::int64_t max_queued_bytes_per_client = 4LL * 1024 * 1024;
  std::int64_t max_queued_bytes = 128LL * 1024 * 1024;
};

struct SessionsConfig {
  // Sessions whose sandbox runs (or is being created) at once; past it, the longest idle one is
  // paused to make room when sessions can be paused, else new sessions are refused ("busy").
  std::int64_t max_sessions = 64;
  // Paused sessions kept on disk (server-wide), in count and in their snapshots' bytes; past
  // either, idle sessions stay running.
  std::int64_t max_paused_sessions = 1024;
  std::int64_t max_paused_gib = 32;
  std::int64_t idle_timeout_s = 900;
  // Sessions one client (one MCP session) may hold; the rest of max_sessions stays for others.
  std::int64_t max_sessions_per_client = 16;
  // A session idle this long is paused: its sandbox checkpointed to snapshot_dir and its
  // container removed (memory released); its next call restores it. 0: never. Needs runsc on a
  // local engine; elsewhere sessions just stay running.
  std::int64_t pause_after_idle_s = 300;
  // The frozen tier, before that: a session with no call whose sandbox stayed quiet (its
  // processes used under 10 % of a core; gVisor's idle Sentry alone uses 3-4 %) this long is
  // frozen with the host's cgroup freezer: no CPU, its memory kept, thawed in milliseconds by
  // whatever reaches it next. 0: never. Needs an engine on the server's host; elsewhere sessions
  // stay running. A session created with freeze: false opts out.
  std::int64_t freeze_after_idle_s = 3;
  // Memory frozen sessions may hold together; past it the longest frozen are paused to disk
  // (when sessions can be paused). 0: half of this host's memory.
  std::int64_t max_frozen_mib = 0;
  // Where paused sessions' snapshots are kept (0700, root only; never mounted into a sandbox).
  std::string snapshot_dir = "/var/lib/sandbox-mcp/snapshots";
  // Named snapshots (snapshot_session) one client may hold, in count and bytes on disk.
  std::int64_t max_snapshots_per_client = 8;
  std::int64_t max_snapshot_mib_per_client = 4096;
  // Named snapshots older than this are removed (with persist, saved sessions too).
  std::int64_t snapshot_ttl_s = 86400;
  // A stopping server saves the sessions of owners that outlive it (stdio, 2026-07-28
  // principals) and their named snapshots, and a server started again with the same instance_id
  // brings them back, each restored on its next call. Needs an explicit instance_id.
  bool persist = false;
  // Copies one fork_session call may make (each is a session: the session limits apply too).
  std::int64_t max_forks_per_call = 8;
};

// Ready sandboxes of the default profile (sandbox.image, runtime, limits; no environment,
// volumes or mcp_allowlist), so a new session skips the container start. A pooled sandbox serves
// one session only and is destroyed with it.
struct PoolConfig {
  std::int64_t size = 2;  // 0 disables the pool
  // Modules each pooled sandbox's Python imports before it is handed out, so a session's first
  // `import pandas` is instant (seconds otherwise). Dotted module names; empty: none. Imported
  // into sys.modules only, no names are bound; modules the image lacks are skipped.
  std::vector<std::string> preload_python = {"numpy", "pandas", "matplotlib.pyplot"};
};

struct VolumesConfig {
  std::vector<AllowedHostDir> allowed_host_dirs;  // empty: the volumes argument is refused
};

struct HttpConfig {
  std::string path = "/mcp";
  std::int64_t max_body_bytes = 48LL * 1024 * 1024;  // fits a 32 MiB upload in base64
  std::vector<std::string> allowed_origins;          // empty: loopback origins only
  std::int64_t session_idle_timeout_s = 1800;
  // MCP sessions (initialize .. DELETE or idle expiry) open at once; past it initialize fails.
  std::int64_t max_sessions = 1024;
  // Requests one MCP session has in flight (running, or waiting for their turn or a task's
  // result); past it a request gets HTTP 429. Notifications and pings always pass.
  std::int64_t max_requests_in_flight_per_session = 64;
  // Open connections in total and per peer IP address; at either the longest-idle one makes
  // room, else a new one gets a 503. 0: derived from the open-file limit at start
  // (transport::defaultConnectionBounds).
  std::int64_t max_connections = 0;
  std::int64_t max_connections_per_address = 0;
  // Request bodies held by all connections at once; >= max_body_bytes.
  std::int64_t max_body_bytes_in_flight = 256LL * 1024 * 1024;
  // A request's header must be complete this long after the connection opens (or after the
  // first byte of a later request): slowloris.
  std::int64_t header_timeout_ms = 10000;
  std::int64_t idle_timeout_ms = 30000;  // keep-alive wait for the next request
};

struct StdioConfig {
  std::int64_t max_message_bytes = 48LL * 1024 * 1024;  // one JSON-RPC line; fits 32 MiB uploads
};

// How each session's MCP sidecar runs (sidecar/README.md).
struct SidecarConfig {
  // "container": a runc container per session, separate from the server's process (default);
  // "process": a child process of the server (no image needed; shares the server's namespaces).
  std::string mode = "container";
  std::string image =
      "sandbox-mcp/sidecar:latest";  // container mode; see docker/Dockerfile.sidecar
  // Container mode: the Docker network the relay joins. "host" reaches what the server's host
  // reaches, loopback upstreams included; a named network confines it further.
  std::string network = "host";
  std::string user = "65534:65534";  // container mode; the session directory is made writable
  std::string binary_path;           // sandbox-sidecar; empty = next to the sandbox-mcp binary
  std::int64_t memory_mib = 64;      // container mode
  std::int64_t pids_limit = 64;      // container mode
  std::int64_t start_timeout_ms = 10000;
  std::int64_t upstream_connect_timeout_ms = 10000;
  std::int64_t upstream_idle_timeout_ms = 60000;  // no byte from the upstream this long: 504
  std::int64_t max_concurrent_requests = 16;
  std::int64_t max_body_bytes = 1024LL * 1024;
  // Each relay's audit log stops growing here; later lines are dropped and counted
  // (get_session_stats: mcp.sidecar.audit_dropped).
  std::int64_t audit_log_max_bytes = 8LL * 1024 * 1024;
};

struct McpConfig {
  // Operator allowlist, in the sidecar's policy format (policy/README.md): URLs or
  // {"url", "methods", "tools", "id"} objects. Non-empty: a call's mcp_allowlist may only narrow
  // it. Empty: a call's list is taken as given (special address ranges still need consent).
  nlohmann::json allowlist = nlohmann::json::array();
  // Per-session directories (sidecar socket, policy, audit log). Empty: /run/sandbox-mcp as root,
  // else $XDG_RUNTIME_DIR/sandbox-mcp, else /tmp/sandbox-mcp-<uid>.
  std::string runtime_dir;
  // Where every session's audit lines are kept after the session ends (appended, JSON lines).
  // Empty: they live in the session's directory and go with it.
  std::string audit_log;
  // Extra CA certificates (PEM) the relay trusts for https MCP servers, besides the system's (an
  // internal CA). Empty: the system's only.
  std::string upstream_ca_file;
  SidecarConfig sidecar;
  // mcp.audit_log is rotated once (to <audit_log>.1, replacing it) before it would grow past this.
  std::int64_t audit_log_max_bytes = 64LL * 1024 * 1024;
};

// The egress gateway (docs/egress.md): HTTP(S) from sandboxes to hosts the operator lists,
// through the session's sidecar. Off unless `enabled`; even then a session gets it only when its
// call asks (the `egress` argument), and a call may only pick profiles and narrow.
struct EgressConfig {
  bool enabled = false;
  // Entries every session with egress gets (policy::loadEgressRules' format): "pypi.org",
  // "host:port", "*.example.com", {"host", "ports", "id"}.
  nlohmann::json allow = nlohmann::json::array();
  // Named lists a call may add (`egress: {"profiles": [...]}`). The defaults below may be
  // replaced by name, or removed with null.
  std::map<std::string, nlohmann::json> profiles = defaultEgressProfiles();
  // The sandbox reaches the proxy at http://127.0.0.1:<proxy_port> (HTTP_PROXY, HTTPS_PROXY).
  std::int64_t proxy_port = 3128;
  std::int64_t max_connections = 64;     // open at once per session
  std::int64_t max_mib = 8192;           // per session, both ways, all connections together
  std::int64_t idle_timeout_s = 120;     // a connection where nothing moves is cut
  std::int64_t max_connection_s = 3600;  // a connection's whole life
  // Headers the proxy adds for named hosts, with values from the server's environment or files:
  // [{"host": "api.example.com", "port": 443, "headers": {"Authorization": {"env": "API_TOKEN",
  // "prefix": "Bearer "}}}] ({"file": "/run/secrets/x"} instead of "env"). For those hosts the
  // sidecar ends TLS with a per-session CA the sandbox trusts and verifies the upstream itself;
  // sandbox code never sees the values.
  nlohmann::json secrets = nlohmann::json::array();
  // Extra CA certificates (PEM) the proxy trusts for those upstreams, besides the system's.
  std::string upstream_ca_file;

  [[nodiscard]] static std::map<std::string, nlohmann::json> defaultEgressProfiles();
};

// Preview URLs (expose_port): a listener of its own that relays browsers to ports inside the
// sandboxes, over the agent (no network interface in the sandbox). Off while `listen` is empty.
struct PreviewConfig {
  // "host:port" to listen on, e.g. "127.0.0.1:8766". Empty: expose_port is refused.
  std::string listen;
  // Each exposure is served at <random label>.<domain>; browsers resolve *.localhost to loopback.
  std::string domain = "localhost";
  // The URL handed out, with "{label}" where the label goes, for a listener behind a front
  // (e.g. "https://{label}.preview.example.com/"). Empty: http://{label}.<domain>:<listen port>/.
  std::string public_url;
  std::int64_t default_expires_s = 3600;  // when expose_port names none
  std::int64_t max_expires_s = 86400;     // the most expose_port may ask for
  std::int64_t max_ports_per_session = 8;
  std::int64_t max_connections_per_session = 32;
  std::int64_t max_connections = 512;  // open at once, all sessions together
  // A connection that moves no byte this long is closed (a WebSocket too).
  std::int64_t idle_timeout_s = 300;
  // Bytes one session's previews may move (both directions, over the session's life). 0: no bound.
  std::int64_t max_mib_per_session = 0;
  // A request's head (request line and fields) larger than this gets 431.
  std::int64_t max_head_bytes = 32LL * 1024;
  std::int64_t header_timeout_ms = 10000;  // for the first request's head
  // Besides the link, a browser must hold a cookie that only a one-time login link sets
  // (expose_port's login_url, minted for a caller the MCP endpoint authenticated): a URL that
  // leaks (history, a screenshot, a Referer) is not enough to open the preview.
  bool require_login = false;

  [[nodiscard]] bool enabled() const noexcept { return !listen.empty(); }
};

// What happens on SIGTERM (or SIGINT, SIGHUP): the server drains. New MCP sessions are refused
// (HTTP 503 with Retry-After; /readyz fails), running executions get up to grace_s to finish,
// then every sandbox is removed. A second signal ends at once.
struct ShutdownConfig {
  std::int64_t grace_s = 25;  // under Kubernetes' default terminationGracePeriodSeconds (30)
};

struct ServerConfig {
  DockerConfig docker;
  SandboxConfig sandbox;
  ExecutionConfig execution;
  ResourcesConfig resources;
  ImagesConfig images;
  TasksConfig tasks;
  SessionsConfig sessions;
  PoolConfig pool;
  VolumesConfig volumes;
  HttpConfig http;
  StdioConfig stdio;
  McpConfig mcp;
  EgressConfig egress;
  PreviewConfig preview;
  ShutdownConfig shutdown;
  // Names this server in its containers' labels and its run-time directory. Empty: the
  // SANDBOX_MCP_INSTANCE_ID environment variable, else random at start. Replicas sharing an
  // engine must each have their own; a server restarted with the same id removes what its
  // earlier run left (sandbox/docker/ownership.h).
  std::string instance_id;
  std::string log_level = "info";
};

// Parses and validates; errors name the field path ("sandbox.memory_mib: must be >= 16").
[[nodiscard]] ServerConfig fromJson(const nlohmann::json& document);
[[nodiscard]] ServerConfig loadFile(const std::string& path);
[[nodiscard]] nlohmann::json toJson(const ServerConfig& config);

}  // namespace config
