// Copies into NCCL receive buffers. LL/LL128 lines carry flags the GPU polls while we write, so a
// line must never appear with its flag before its data: copy in ascending address order with
// ordinary stores (no non-temporal or backwards copies, which memcpy may pick for large sizes).
#pragma once

#include <cstddef>

namespace zipnet::pipeline {

void ordered_copy(void* dst, const void* src, size_t n);

}  // namespace zipnet::pipeline
