// The project's exceptions. Every error meant for a user derives from nvfp4::Exception, under one
// of three kinds: the command line asks for something the tool cannot do (UsageError), an input
// is not what it must be (InputError: nvfp4::Error's contract rejections, io::FormatError's
// malformed files), or an output cannot be written where asked (OutputError). nvfp4-verify prints
// what() as one line on stderr and exits 2 (cli/run_command.h).
#pragma once

#include <stdexcept>

namespace nvfp4 {

class Exception : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UsageError : public Exception {
 public:
  using Exception::Exception;
};

class InputError : public Exception {
 public:
  using Exception::Exception;
};

class OutputError : public Exception {
 public:
  using Exception::Exception;
};

}  // namespace nvfp4
