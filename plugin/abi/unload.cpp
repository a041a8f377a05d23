// Gives back, when NCCL dlcloses the plugin, what the statically linked C++ runtime allocated at
// dlopen. libstdc++ is linked into this .so (-static-libstdc++, plugin/meson.build), so its
// exception emergency pool (~72 KiB, malloc'ed by its load-time initialiser) belongs to this .so
// alone and nothing else ever frees it: every unload/reload cycle would leak it (valgrind: "definitely
// lost", test/reliability [reload][heap]). Only in the .so, never in binaries that share libstdc++.
namespace __gnu_cxx {
void __freeres() noexcept;  // libstdc++: frees the emergency pool
}

__attribute__((destructor)) static void zipnet_release_static_libstdcxx() { __gnu_cxx::__freeres(); }
