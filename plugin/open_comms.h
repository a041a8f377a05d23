// What each context still holds open: send, receive and listen comms. NCCL's error paths can
// finalize a context and then dlclose the plugin with comms it never closed (under NCCL 2.28, a
// failed regMr during connection setup: docs/reliability.md, bug 9). Their stream threads would then
// run in unmapped code, so finalize() closes what its context still holds. Also refuses a second
// close of the same comm.
#pragma once

#include <utility>
#include <vector>

namespace zipnet::open_comms {

using Closer = void (*)(void* obj);

// Records obj as open under ctx; close(obj) is what finalize calls if NCCL never closes it.
// Throws std::bad_alloc when out of memory (nothing is recorded then).
void add(const void* ctx, void* obj, Closer close);
// Forgets obj, recorded with this closer, before the caller closes it. False if it is not open
// as that kind of object (closed already, another kind, never ours); obj is not dereferenced, so a
// second close of a freed comm is refused without touching its memory.
bool remove(void* obj, Closer close);
// Forgets and returns everything ctx still holds; the caller closes each.
std::vector<std::pair<void*, Closer>> take(const void* ctx);

}  // namespace zipnet::open_comms
