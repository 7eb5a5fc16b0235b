// The host C++ compiler as both backends run it: the CPU backend compiles
// its kernels with it, and both compile an exported library's host units
// with it (Note [Exported library] in src/export/export_library.cpp).
//
// The compiler is TILEJIT_CXX, else CXX, else `c++`, read at every compile so
// that a process can switch compilers (tests do). It runs through
// posix_spawnp, never a shell: nothing in a kernel name, a flag or a path is
// ever interpreted, and a missing compiler is reported as exactly that rather
// than as a shell's exit code 127. Each compile works in a fresh directory,
// removed on every path out (with the device headers, when given, written
// into its include/, src/backend/common/device_files.h), except after a
// failure under TILEJIT_KEEP_FAILED=1, when the command in the error can be
// run again as it is.
#include "backend/common/host_compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/common/cxx_source.h"
#include "tilejit/core/error.h"

extern char** environ;

namespace tilejit::backend {

std::string host_compiler_name() {
  for (const char* var : {"TILEJIT_CXX", "CXX"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return v;
  }
  return "c++";
}

// Flags without which the output would not be a loadable kernel.
const std::vector<std::string>& host_required_flags() {
  static const std::vector<std::string> flags = {"-std=c++17", "-fPIC", "-shared"};
  return flags;
}

namespace {

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_=+./,:@%", c))) {
      return true;
    }
  }
  return false;
}

// The command as one line a reader can paste into a shell.
std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!needs_quotes(a)) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// this goes out of scope, whichever way that happens.
class TempDir {
 public:
  explicit TempDir(const char* backend) : backend_(backend) {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/tilejit-" + std::string(backend_) + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (TILEJIT_UNLIKELY(::mkdtemp(buf.data()) == nullptr)) {
      const int err = errno;
      TILEJIT_THROW(kRuntimeError) << backend_ << " backend: cannot create a temporary directory '"
                                   << templ << "': " << std::strerror(err);
    }
    path_ = buf.data();
  }
  ~TempDir() {
    if (kept_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Leaves the directory and its files in place.
  void keep() { kept_ = true; }

 private:
  const char* backend_;
  std::string path_;
  bool kept_ = false;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const char* backend, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  TILEJIT_CHECK(out.good(), kRuntimeError) << backend << " backend: cannot write '" << path << "'";
}

struct ProcessResult {
  int spawn_errno = 0;  // nonzero: the program could not be started
  int status = 0;       // waitpid status otherwise
};

// Runs argv[0] (searched in PATH) with stdin from /dev/null and stdout and
// stderr both into `output_path`.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& output_path) {
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  ProcessResult result;
  // glibc's posix_spawnp reports a failed exec (no such file, not
  // executable) as its return value, not as a child exit status.
  result.spawn_errno = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (result.spawn_errno != 0) return result;
  while (::waitpid(pid, &result.status, 0) < 0) {
    if (errno != EINTR) {
      result.spawn_errno = errno;
      break;
    }
  }
  return result;
}

// `name` as the absolute path that posix_spawnp would run, so that the cache
// key changes when PATH points somewhere else; `name` itself when not found.
}  // namespace

std::string resolve_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// The first line of `<compiler> --version`, once per compiler path: a
// compiler is not upgraded under a running process often enough to pay a
// process spawn per key.
std::string host_compiler_version(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = versions.find(compiler);
    if (it != versions.end()) return it->second;
  }
  TempDir dir("cpu");
  const std::string out_path = dir.path() + "/version.txt";
  ProcessResult r = run_process({compiler, "--version"}, out_path);
  if (r.spawn_errno != 0 || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    // Not cached: compile() reports the failure with the kernel's name, and a
    // compiler installed later is seen.
    return "unknown";
  }
  std::string text = read_file(out_path);
  std::string line = text.substr(0, text.find('\n'));
  std::lock_guard<std::mutex> lock(mutex);
  versions.emplace(compiler, line);
  return line;
}

std::string file_stem(const std::string& kernel_name) {
  std::string stem;
  for (char c : kernel_name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') stem += c;
  }
  if (stem.empty()) stem = "kernel";
  return stem.substr(0, 64);
}

namespace {

// The first "<file>:<line>[:<col>]: [fatal ]error" in `log` whose file is
// `source_path`, `unit_name` (the name a tile unit's own lines resume
// under after a body's #line directives, Note [Line directives]) or
// `body_name`: {line, is_body}; {0, false} when none is.
std::pair<int, bool> first_error_line(const std::string& log, const std::string& source_path,
                                      const std::string& unit_name,
                                      const std::string& body_name) {
  for (const std::string& line : split_lines(log)) {
    size_t at = line.find(": error");
    if (at == std::string::npos) at = line.find(": fatal error");
    if (at == std::string::npos) continue;
    // Peel ":<col>" and ":<line>" off the end of the location.
    std::string loc = line.substr(0, at);
    std::vector<std::string> numbers;
    while (numbers.size() < 2) {
      size_t colon = loc.rfind(':');
      if (colon == std::string::npos) break;
      std::string tail = loc.substr(colon + 1);
      if (tail.empty() || tail.find_first_not_of("0123456789") != std::string::npos) break;
      numbers.push_back(tail);
      loc.resize(colon);
    }
    if (numbers.empty() || numbers.back().size() > 9) continue;
    const int line_no = std::stoi(numbers.back());
    if (loc == body_name) return {line_no, true};
    if (loc == source_path || loc == unit_name) return {line_no, false};
  }
  return {0, false};
}

[[noreturn, gnu::cold]] void throw_compile_failure(const char* display,
                                                   const std::string& kernel_name,
                                                   const std::vector<std::string>& argv,
                                                   const ProcessResult& r, std::string log,
                                                   const std::string& source,
                                                   const std::string& source_path,
                                                   TempDir& dir) {
  std::ostringstream os;
  os << kernel_name << ": the " << display << " compiler failed (";
  if (WIFEXITED(r.status)) {
    os << "exit code " << WEXITSTATUS(r.status);
  } else if (WIFSIGNALED(r.status)) {
    os << "killed by signal " << WTERMSIG(r.status);
  } else {
    os << "wait status " << r.status;
  }
  os << ")\ncommand: " << command_line(argv) << "\n";
  std::string kept;
  if (keep_failed_source()) {
    dir.keep();
    kept = source_path;
    os << "kept: " << source_path << " and the command's other files (TILEJIT_KEEP_FAILED=1)\n";
  } else {
    os << "(its files are removed; set TILEJIT_KEEP_FAILED=1 to keep them and run it again)\n";
  }
  const std::string body_name = body_file_name(kernel_name);
  auto [error_line, in_body] = first_error_line(log, source_path, kernel_name + ".cpp", body_name);
  os << clip_log(std::move(log));
  append_source_excerpt(os, source, error_line, in_body, source_path, body_name);
  throw CompileError(os.str(), source, std::move(kept));
}

// Compiles `units` (C++ translation units, named by file) in one compiler
// run into a shared object: `flags`, then the required ones, then the
// units, then `link_flags`, where "@DIR@" in a link flag is the working
// directory (which holds `files`). The error of a failed compile shows the
// first unit's source: the kernel's.
std::string compile_units(const HostCompile& how, const std::vector<SourceUnit>& units,
                          const std::vector<SourceUnit>& files, const std::string& kernel_name,
                          const std::vector<std::string>& flags,
                          const std::vector<std::string>& link_flags) {
  TempDir dir(how.backend);
  const std::string stem = file_stem(kernel_name);
  const std::string object_path = dir.path() + "/" + stem + ".so";
  const std::string log_path = dir.path() + "/compile.log";
  const std::string include_dir = dir.path() + "/include";
  if (!how.device_files.empty()) write_device_files(how.device_files, include_dir);
  for (const SourceUnit& f : files) write_file(how.backend, dir.path() + "/" + f.name, f.text);

  const std::string compiler = host_compiler_name();
  std::vector<std::string> argv = {compiler};
  for (const std::string& f : flags) argv.push_back(f);
  for (const std::string& f : host_required_flags()) argv.push_back(f);
  if (!how.device_files.empty()) argv.push_back("-I" + include_dir);
  for (const char* a : {"-x", "c++"}) argv.push_back(a);
  for (const SourceUnit& u : units) {
    const std::string path = dir.path() + "/" + u.name;
    write_file(how.backend, path, u.text);
    argv.push_back(path);
  }
  argv.push_back("-o");
  argv.push_back(object_path);
  for (std::string f : link_flags) {
    if (size_t at = f.find("@DIR@"); at != std::string::npos) f.replace(at, 5, dir.path());
    argv.push_back(std::move(f));
  }

  ProcessResult r = run_process(argv, log_path);
  if (TILEJIT_UNLIKELY(r.spawn_errno != 0)) {
    TILEJIT_THROW(kCompileError) << kernel_name << ": cannot run the C++ compiler '" << compiler
                                 << "': " << std::strerror(r.spawn_errno) << " (set TILEJIT_CXX)";
  }
  if (TILEJIT_UNLIKELY(!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)) {
    throw_compile_failure(how.display, kernel_name, argv, r, read_file(log_path), units.front().text,
                          dir.path() + "/" + units.front().name, dir);
  }
  std::string binary = read_file(object_path);
  TILEJIT_CHECK(!binary.empty(), kCompileError)
      << kernel_name << ": the " << how.display << " compiler exited with 0 but wrote no shared object\ncommand: "
      << command_line(argv) << "\n" << read_file(log_path);
  return binary;
}

}  // namespace

std::string compile_host_library(const HostCompile& how, const std::vector<SourceUnit>& units,
                                 const std::vector<SourceUnit>& files,
                                 const std::string& kernel_name,
                                 const std::vector<std::string>& flags,
                                 const std::vector<std::string>& link_flags) {
  TILEJIT_ICHECK(!units.empty()) << kernel_name << ": compile_host_library without a unit";
  return compile_units(how, units, files, kernel_name, flags, link_flags);
}

}  // namespace tilejit::backend
