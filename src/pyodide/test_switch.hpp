// The security battery's switch between confinement layers (docs/testing.md). Exists only in builds configured
// with -DCODE_INTERPRETER_SECURITY_TEST_SWITCHES=ON; any other build never reads the environment for it.
#pragma once

namespace code_interpreter::detail {

enum class TestConfinement {
  kFull,        ///< both layers (the only mode of a normal build)
  kKernelOnly,  ///< the realm lock-down off (init frame "realm": false); the kernel layer as usual
  kRealmOnly,   ///< Landlock limited to ABI 2 and no seccomp filter, as on Debian 12's stock kernel
};

/// CODE_INTERPRETER_TEST_CONFINEMENT read when a runtime is spawned: unset, "full" or anything unknown is kFull,
/// "kernel-only" and "realm-only" the modes above. Always kFull in a build without the switch.
TestConfinement test_confinement() noexcept;

}  // namespace code_interpreter::detail
