// WorkspaceInit: how a workspace's memory is prepared before a launch. Shared
// by jit options (declared workspaces) and the tile IR (T.alloc_global).
#pragma once

#include <cstdint>

namespace tilejit {

enum class WorkspaceInit : uint8_t {
  kEmpty,     // uninitialised (the default)
  kZero,      // zeroed before every launch
  kZeroOnce,  // zeroed when its arena is first used for this layout; the
              // kernel promises to leave it zeroed when it returns
};

}  // namespace tilejit
