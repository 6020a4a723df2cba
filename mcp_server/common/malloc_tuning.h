// glibc malloc settings for processes that move large messages (file transfers of up to 48 MiB,
// their base64 and JSON forms). By default glibc maps fresh pages for every block above its mmap
// threshold and returns them on free, so each 10 MiB upload would touch ~100 MiB of new pages:
// thousands of page faults, which cost ~25 us each in the VMs these servers run in (more than
// the copying itself). Large blocks come from the heap instead and freed memory is kept for the
// next transfer, in at most two arenas so the kept memory stays bounded.
#pragma once

#include <malloc.h>

namespace common {

inline void tuneMallocForLargeMessages() noexcept {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
  mallopt(M_ARENA_MAX, 2);
}

}  // namespace common
