// Symbol visibility: the library is built with hidden visibility; only what is marked here is exported.
#pragma once

#if defined(CODE_INTERPRETER_STATIC)
#define CODE_INTERPRETER_EXPORT
#else
#define CODE_INTERPRETER_EXPORT __attribute__((visibility("default")))
#endif
