// THE table of zipnet's ZIPNET_* environment variables: name, type, default, doc string.
// Included by params.h (declares the Params struct) and params.cpp (parsing, banner, docs table).
// docs/params.md is generated from it (plugin/tests/params_md) and a test checks they agree.
// NCCL has already merged /etc/nccl.conf and ~/.nccl.conf into the environment when init runs.
//
// X(NAME, Type, default, doc)   -- the variable is ZIPNET_<NAME>
#define ZIPNET_PARAM_TABLE(X)                                                                            \
  X(ENABLE, BoolT, "1",                                                                                  \
    "Plugin on/off. 0 makes init fail cleanly, so NCCL falls back to its own IB/Socket transports.")    \
  X(COMPRESS, BoolT, "1",                                                                                \
    "Compression on/off. 0 keeps the zipnet TCP transport but sends every message raw.")                 \
  X(DTYPE, DtypeT, "auto",                                                                               \
    "Element type the codec assumes: auto (detect per sub-chunk) | bf16 | fp16 | fp32 | opaque.")       \
  X(MIN_COMPRESS_BYTES, BytesT, "128K",                                                                  \
    "Messages smaller than this are sent raw (keeps small-message latency flat). Suffixes K, M, G.")     \
  X(CODEC_MODE, ModeMaskT, "auto",                                                                       \
    "Codec modes allowed: auto (all) or a list of raw,planes,window,rans (raw is always allowed).")      \
  X(THREADS, ThreadsT, "0",                                                                              \
    "Codec worker threads shared by all comms of the process; 0 = auto (half the CPUs, 2..8).")        \
  X(SOCKET_IFNAME, StringT, "",                                                                          \
    "Interfaces to use, NCCL syntax: prefix list, ^ excludes, = exact (e.g. eth0, ^docker, =lo). "      \
    "Empty: every up interface except lo and docker*, or lo if there is no other.")                   \
  X(PORT_RANGE, PortRangeT, "",                                                                          \
    "Listen ports as LO-HI (e.g. 50000-50100); empty = any free port.")                                 \
  X(STREAMS, StreamsT, "2",                                                                              \
    "TCP streams per connection; one message is split over all of them, each driven by its own thread.") \
  X(SUBCHUNK_BYTES, SubchunkT, "128K",                                                                   \
    "Sub-chunk size: each is its own codec frame, so sending starts before a message is compressed. "   \
    "Multiple of 4K, 4K..16M.")                                                                         \
  X(ADAPTIVE, BoolT, "1",                                                                                \
    "Per peer host (its connections together), measure what compressed and raw sends deliver and "     \
    "send raw while raw delivers more. 0: always compress eligible messages.")                          \
  X(STATS_FILE, StringT, "",                                                                             \
    "If set, each comm appends one JSON line of stats to this file when it closes.")                    \
  X(TIMEOUT, TimeoutT, "30",                                                                             \
    "Seconds. Bounds every wait on a peer: connect/accept handshakes, TCP user timeout and keepalive "  \
    "(a dead peer makes test() fail within it).")                                                       \
  X(PTR, PtrT, "host",                                                                                   \
    "Buffer kinds advertised to NCCL: host (pinned host memory). The GPU data path comes later.")       \
  X(FAULT_INJECT, FaultsT, "",                                                                           \
    "TEST ONLY. Comma list of faults: regmr_fail, staging_exhausted, corrupt_frame, truncate_frame, "   \
    "short_frame, corrupt_raw, wrong_version, reset. Never set in production.")
