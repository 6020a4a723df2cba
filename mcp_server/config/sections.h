// One reader per section of the configuration document, called by fromJson (config.cc). Each
// reads its section when present, rejects unknown keys and validates the values it read. Private
// to config/.
#pragma once

#include "config/config.h"
#include "config/object_reader.h"

namespace config {

// docker, sandbox, execution, images, resources (sandbox_sections.cc).
void readDocker(ObjectReader& parent, DockerConfig& out);
void readSandbox(ObjectReader& parent, SandboxConfig& out);
void readExecution(ObjectReader& parent, ExecutionConfig& out);
void readImages(ObjectReader& parent, ImagesConfig& out);
void readResources(ObjectReader& parent, ResourcesConfig& out);

// tasks, sessions, pool, volumes (session_sections.cc).
void readTasks(ObjectReader& parent, TasksConfig& out);
void readSessions(ObjectReader& parent, SessionsConfig& out);
void readPool(ObjectReader& parent, PoolConfig& out);
void readVolumes(ObjectReader& parent, VolumesConfig& out);

// http, stdio (transport_sections.cc).
void readHttp(ObjectReader& parent, HttpConfig& out);
void readStdio(ObjectReader& parent, StdioConfig& out);
void readPreview(ObjectReader& parent, PreviewConfig& out);

// mcp, with its sidecar (mcp_sections.cc).
void readMcp(ObjectReader& parent, McpConfig& out);

// egress (egress_section.cc).
void readEgress(ObjectReader& parent, EgressConfig& out);

// instance_id, shutdown (server_sections.cc).
void readInstanceId(ObjectReader& root, std::string& out);
void readShutdown(ObjectReader& parent, ShutdownConfig& out);

}  // namespace config
