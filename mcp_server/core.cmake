# mcp_core: configuration, the MCP protocol layer, sessions and the built-in tools.
add_library(mcp_core STATIC
  config/config.cc
  server/mcp_server.cc
  server/session.cc
  server/session_manager.cc
  server/volume_policy.cc
  tools/cleanup_session.cc
  tools/download_file.cc
  tools/exec_common.cc
  tools/get_session_stats.cc
  tools/list_files.cc
  tools/list_sessions.cc
  tools/register_builtin_tools.cc
  tools/run_code.cc
  tools/run_shell.cc
  tools/schema_validator.cc
  tools/session_options.cc
  tools/tool_registry.cc
  tools/upload_file.cc)
target_include_directories(mcp_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(mcp_core
  PUBLIC mcp_jsonrpc mcp_common nlohmann_json::nlohmann_json spdlog::spdlog
         Threads::Threads
  PRIVATE project_warnings project_sanitizers)

# mcp_app: command line and wiring of the concrete backend and transports.
add_library(mcp_app STATIC app/cli_options.cc app/server_app.cc)
target_link_libraries(mcp_app PUBLIC mcp_core mcp_sandbox mcp_transport
                      PRIVATE project_warnings project_sanitizers)

add_executable(sandbox-mcp main.cc)
target_link_libraries(sandbox-mcp PRIVATE mcp_app project_warnings project_sanitizers)
# sandbox-mcp finds the agent next to itself; building the server builds the agent.
add_dependencies(sandbox-mcp sandbox-agent)
