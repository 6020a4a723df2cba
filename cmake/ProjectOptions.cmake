# Warnings and sanitizers live on INTERFACE targets so each binary opts in explicitly:
# the static in-container agent must never carry the ASan runtime.
add_library(project_warnings INTERFACE)
target_compile_options(project_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused
                       -Woverloaded-virtual -Wnull-dereference -Wformat=2)
option(SANDBOX_WERROR "Treat warnings as errors (CI)" OFF)
if(SANDBOX_WERROR)
  target_compile_options(project_warnings INTERFACE -Werror)
endif()

add_library(project_sanitizers INTERFACE)
option(SANDBOX_SANITIZE "Build host binaries with AddressSanitizer + UBSan" OFF)
if(SANDBOX_SANITIZE)
  target_compile_options(project_sanitizers INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(project_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
