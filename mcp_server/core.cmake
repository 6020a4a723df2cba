# mcp_core: configuration. The layers above it have a target per folder, each depending only
# on the ones below: mcp_protocol (mcp/) -> mcp_tools (tools/) -> mcp_server_sessions (server/)
# -> mcp_sandbox (sandbox/).
add_library(mcp_core STATIC
  config/config.cc
  config/config_to_json.cc
  config/principals.cc
  config/mcp_sections.cc
  config/egress_section.cc
  config/sandbox_sections.cc
  config/server_sections.cc
  config/session_sections.cc
  config/transport_sections.cc
  config/weakenings.cc
)
target_include_directories(mcp_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(mcp_core
  PUBLIC mcp_common policy nlohmann_json::nlohmann_json spdlog::spdlog
  PRIVATE project_warnings project_sanitizers)

# mcp_server_sessions: the sandbox sessions: registry, creation, warm pool, limits, the MCP
# egress gateway of a session. Knows nothing of tools or of the MCP protocol.
add_library(mcp_server_sessions STATIC
  server/audit_tally.cc
  server/mcp_gateway.cc
  server/preview_table.cc
  server/session_egress.cc
  server/sandbox_uri.cc
  server/server_endpoints.cc
  server/session.cc
  server/session_factory.cc
  server/session_metrics.cc
  server/session_freezer.cc
  server/session_registry.cc
  server/snapshot_catalog.cc
  server/volume_policy.cc
  server/warm_pool.cc)
target_link_libraries(mcp_server_sessions
  PUBLIC mcp_core mcp_common mcp_sandbox mcp_metrics policy nlohmann_json::nlohmann_json
         spdlog::spdlog Threads::Threads
  PRIVATE project_warnings project_sanitizers)

# mcp_tools: one file per built-in tool, their registry and argument validation.
add_library(mcp_tools STATIC
  tools/cleanup_session.cc
  tools/snapshot_tools.cc
  tools/download_file.cc
  tools/exec_common.cc
  tools/result_spill.cc
  tools/get_session_stats.cc
  tools/list_files.cc
  tools/list_sessions.cc
  tools/output_forwarder.cc
  tools/preview_tools.cc
  tools/register_builtin_tools.cc
  tools/run_code.cc
  tools/run_shell.cc
  tools/schema_validator.cc
  tools/session_options.cc
  tools/tool_metrics.cc
  tools/tool_registry.cc
  tools/upload_file.cc)
target_link_libraries(mcp_tools
  PUBLIC mcp_server_sessions
  PRIVATE mcp_base project_warnings project_sanitizers)

# mcp_protocol: the MCP protocol above the tools: lifecycle, tools/call, tasks, resources,
# logging, cancellation; McpServer is the EndpointFactory the transports serve.
add_library(mcp_protocol STATIC
  mcp/cancellable_requests.cc
  mcp/client_requests.cc
  mcp/completions.cc
  mcp/input_required.cc
  mcp/mcp_catalogs.cc
  mcp/mcp_server.cc
  mcp/mcp_tasks.cc
  mcp/product_prompts.cc
  mcp/prompt_catalog.cc
  mcp/request_state.cc
  mcp/resource_catalog.cc
  mcp/sandbox_file_watch.cc
  mcp/session_lanes.cc
  mcp/session_resources.cc
  mcp/subscriptions.cc
  mcp/task_extension.cc
  mcp/task_notifications.cc
  mcp/task_runner.cc
  mcp/task_store.cc
  mcp/task_store_input.cc
  mcp/tool_wire.cc)
# OpenSSL: the HMAC that seals input-required request states (request_state.cc).
find_package(OpenSSL REQUIRED)
target_link_libraries(mcp_protocol
  PUBLIC mcp_tools mcp_jsonrpc
  PRIVATE OpenSSL::Crypto project_warnings project_sanitizers)

# mcp_app: command line and wiring of the concrete backend and transports.
# sandbox_mcp.py (the in-sandbox MCP client) is embedded; the server writes it to its run-time
# directory and mounts it into every sandbox.
set(APP_GENERATED_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
embed_text(${CMAKE_CURRENT_SOURCE_DIR}/sandbox/python/sandbox_mcp.py
           ${APP_GENERATED_DIR}/app/sandbox_mcp_source.h kSandboxMcpPython app
           "Embedding sandbox_mcp.py into sandbox-mcp")
add_library(mcp_app STATIC app/ca_file_check.cc app/cli_options.cc app/drain.cc app/fleet_endpoints.cc app/server_app.cc
            app/server_metrics.cc app/serving.cc app/signal_watcher.cc app/warm_up.cc
            ${APP_GENERATED_DIR}/app/sandbox_mcp_source.h)
target_include_directories(mcp_app PRIVATE ${APP_GENERATED_DIR})
target_link_libraries(mcp_app PUBLIC mcp_protocol mcp_sandbox mcp_transport
                      PRIVATE OpenSSL::Crypto project_warnings project_sanitizers)

add_executable(sandbox-mcp main.cc)
target_link_libraries(sandbox-mcp PRIVATE mcp_app project_warnings project_sanitizers)
# sandbox-mcp finds the agent and the sidecar next to itself; building the server builds both.
add_dependencies(sandbox-mcp sandbox-agent sandbox-sidecar)

# mcp_preview: the preview listener (preview.listen): browsers reach ports inside the sandboxes
# (expose_port) through the agent, never through a network interface of the sandbox.
add_library(mcp_preview STATIC
  preview/preview_connection.cc
  preview/preview_gate.cc
  preview/preview_listener.cc)
target_link_libraries(mcp_preview
  PUBLIC mcp_server_sessions mcp_transport Boost::headers
  PRIVATE project_warnings project_sanitizers)
target_link_libraries(mcp_app PUBLIC mcp_preview)
