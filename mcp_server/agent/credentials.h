// Privilege separation between the agent and the code it runs. The container starts the agent as
// root with only CAP_SETUID and CAP_SETGID; the agent keeps real and saved uid 0 but makes its
// effective ids the code user's (so files it writes belong to that user and it has no effective
// capability left), and every child it spawns becomes that user entirely. Code running as the
// code user then differs from PID 1 in real uid, and both Linux and gVisor refuse it
// /proc/1/fd/*, /proc/1/mem, ptrace and kill on the agent: the agent channel stays the agent's.
// Not thread-safe: call adopt() once, before any child is spawned.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace agent {

struct CodeUser {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Parses "uid:gid" (decimal, both required); nullopt when malformed.
[[nodiscard]] std::optional<CodeUser> parseCodeUser(std::string_view text);

// Enters the split described above. Throws std::system_error when a step fails (e.g. the
// container lacks CAP_SETUID/CAP_SETGID, or the agent was not started as root).
void adoptCodeUser(const CodeUser& user);

// The user children become (set by adoptCodeUser), or nullopt when the agent runs unsplit.
[[nodiscard]] const std::optional<CodeUser>& codeUser() noexcept;

// In a forked child, before exec: become the code user for real, effective and saved ids.
// Async-signal-safe. Returns false (errno set) on failure.
[[nodiscard]] bool becomeCodeUserInChild() noexcept;

// Overwrites the agent's initial environment block (what /proc/1/environ shows, which gVisor
// serves to any uid) after moving the variables to the heap, where children still inherit them.
void scrubInitialEnvironment();

}  // namespace agent
