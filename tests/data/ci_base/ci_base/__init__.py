"""A dependency-free package of the tests' package lock (tests/CMakeLists.txt writes the lock)."""

VALUE = 41
