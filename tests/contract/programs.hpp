// The programs the contract scenarios run. Every backend runs the same text; the fake harness answers each with
// its scripted result (fake_catalogue.cpp). Paths are relative: every backend resolves them against its working
// directory, in code and in the file calls alike.
#pragma once

#include <string_view>

namespace contract::prog {

// ---- statuses ----
inline constexpr std::string_view kHi = "print('hi')";
inline constexpr std::string_view kStderr = "import sys\nprint('oops', file=sys.stderr)";
inline constexpr std::string_view kBoth = "import sys\nprint('out')\nprint('err', file=sys.stderr)";
inline constexpr std::string_view kExit0 = "import sys\nprint('a')\nsys.exit(0)";
inline constexpr std::string_view kExitNone = "import sys\nsys.exit(None)";
inline constexpr std::string_view kDivZero = "print('before')\n1/0";
inline constexpr std::string_view kSyntaxError = "def (:";
inline constexpr std::string_view kExit3 = "import sys\nsys.exit(3)";
inline constexpr std::string_view kExitMinus1 = "import sys\nsys.exit(-1)";
inline constexpr std::string_view kExit256 = "import sys\nsys.exit(256)";
inline constexpr std::string_view kExitMessage = "import sys\nsys.exit('message')";
inline constexpr std::string_view kExitTrue = "import sys\nsys.exit(True)";
inline constexpr std::string_view kExitHuge = "import sys\nsys.exit(2**40 + 5)";
inline constexpr std::string_view kExitVeryHuge = "import sys\nsys.exit(10**400)";
inline constexpr std::string_view kOwnKeyboardInterrupt = "raise KeyboardInterrupt('mine')";
inline constexpr std::string_view kSurrogate = "raise ValueError(b'\\xff'.decode('utf-8', 'surrogateescape'))";
inline constexpr std::string_view kRaiseValue = "raise ValueError('bad value')";
inline constexpr std::string_view kMultilineValue = "raise ValueError('first\\nsecond')";
inline constexpr std::string_view kOwnClass = "class CtError(Exception):\n    pass\nraise CtError('custom')";
inline constexpr std::string_view kEmptyMessage = "raise RuntimeError()";
inline constexpr std::string_view kChained =
    "try:\n    1/0\nexcept Exception as e:\n    raise KeyError('k') from e";
inline constexpr std::string_view kStderrThenRaise =
    "import sys\nprint('warn', file=sys.stderr, flush=True)\nraise OSError('disk')";
inline constexpr std::string_view kSetX = "x = 41";
inline constexpr std::string_view kPrintX = "print(x + 1)";
inline constexpr std::string_view kStatement = "y = 1 + 1";
inline constexpr std::string_view kExpression = "6 * 7";
inline constexpr std::string_view kNoneValue = "None";
inline constexpr std::string_view kEmpty = "";
inline constexpr std::string_view kPass = "pass";
inline constexpr std::string_view kWriteMarker = "open('ct_marker.txt', 'w').write('ran')";
inline constexpr std::string_view kReadMarker = "import os\nprint(os.path.exists('ct_marker.txt'))";
inline constexpr std::string_view kEnvGreeting = "import os\nprint(os.environ.get('CT_GREETING'))";
inline constexpr std::string_view kEnvTwo = "import os\nprint(os.environ.get('CT_A'), os.environ.get('CT_B'))";
inline constexpr std::string_view kSleepShort = "import time\ntime.sleep(0.1)\nprint('slept')";

// ---- output ----
inline constexpr std::string_view kLines = "for i in range(3):\n    print(f'line {i}')\nprint('tail', end='')";
inline constexpr std::string_view kStderrLines = "import sys\nsys.stderr.write('e1\\ne2\\n')\nsys.stderr.write('e3')";
// Raw bytes through the stream's file descriptor (a Jupyter kernel's sys.stdout has no `buffer`).
inline constexpr std::string_view kIllFormed =
    "import os, sys\nos.write(sys.stdout.fileno(), b'a\\xffb\\xe2\\x82c\\xf0\\x9f\\x98d\\xed\\xa0\\x80e\\n')";
inline constexpr std::string_view kIllFormedStderr =
    "import os, sys\nos.write(sys.stderr.fileno(), b'x\\xc3(y\\n')";
inline constexpr std::string_view kUnicode = "print('h\\u00e9llo \\u20ac \\U0001F600')";
inline constexpr std::string_view kLongLine = "print('\\u20ac' * 30000)";
inline constexpr std::string_view kPartial = "print('x', end='')";
inline constexpr std::string_view kAfterPartial = "print('y')";
inline constexpr std::string_view kOverCap = "print('a' * 150000)";
inline constexpr std::string_view kOverCapWide = "print('\\u20ac' * 50000)";
inline constexpr std::string_view kOverCapStderr = "import sys\nsys.stderr.write('b' * 150000)";
inline constexpr std::string_view kAtCap = "import sys\nsys.stdout.write('c' * 100000)";
inline constexpr std::string_view kThreeLines = "print('one')\nprint('two')\nprint('three')";
inline constexpr std::string_view kThreeErrLines =
    "import sys\nsys.stderr.write('one\\n')\nsys.stderr.write('two\\n')";
inline constexpr std::string_view kMixed = "import sys\nprint('o1')\nprint('e1', file=sys.stderr)\nprint('o2')";
inline constexpr std::string_view kNoNewline = "import sys\nsys.stdout.write('no newline')";
inline constexpr std::string_view kNulInOutput = "print('a\\x00b\\tc')";
inline constexpr std::string_view kThousandLines = "for i in range(1000):\n    print(i)";
inline constexpr std::string_view kBlankLines = "print('')\nprint('')\nprint('z')";
inline constexpr std::string_view kLineThenSleep =
    "import time\nprint('early', flush=True)\ntime.sleep(1.5)\nprint('late')";

// ---- timeouts and cancellation ----
inline constexpr std::string_view kBusy = "while True:\n    pass";
inline constexpr std::string_view kStartedThenBusy = "print('started', flush=True)\nwhile True:\n    pass";
inline constexpr std::string_view kSetZ = "z = 'kept'";
inline constexpr std::string_view kPrintZ = "print(z)";
inline constexpr std::string_view kCancelWrite = "open('ct_cancel.txt', 'w').write('ran')";
inline constexpr std::string_view kCancelCheck = "import os\nprint(os.path.exists('ct_cancel.txt'))";

// ---- files ----
inline constexpr std::string_view kCodeWrites = "open('ct_code.txt', 'w').write('from code')";
inline constexpr std::string_view kCodeReads = "print(open('ct_host.txt').read())";
inline constexpr std::string_view kReadAttachment = "print(open('ct_up/in.txt').read())";
inline constexpr std::string_view kReadBinaryAttachment =
    "data = open('ct_up/all.bin', 'rb').read()\nprint(len(data), data == bytes(range(256)))";
inline constexpr std::string_view kAttachmentCount = "import os\nprint(sorted(os.listdir('ct_up')))";

// ---- concurrency ----
inline constexpr std::string_view kThreadA = "print('from a')";
inline constexpr std::string_view kThreadB = "print('from b')";

// ---- transport faults ----
inline constexpr std::string_view kFaultWrite = "open('ct_fault.txt', 'w').write('ran')\nprint('ran')";

}  // namespace contract::prog
