#include "tilejit/ir/buffer.h"

#include <atomic>

#include "tilejit/core/error.h"

namespace tilejit::ir {
namespace {

std::atomic<uint64_t> g_next_buffer_id{1};

bool is_identifier(const std::string& s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::string Span::str() const {
  if (empty()) return {};
  std::string out = file;
  out += ':';
  out += std::to_string(line);
  out += ':';
  out += std::to_string(col);
  return out;
}

const char* scope_name(Scope scope) {
  switch (scope) {
    case Scope::kGlobal: return "global";
    case Scope::kShared: return "shared";
    case Scope::kFragment: return "fragment";
    case Scope::kLocal: return "local";
  }
  return "?";
}

Buffer Buffer::make(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                    Span span, int param, WorkspaceInit init) {
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << "buffer name '" << name << "' is not a C identifier";
  for (size_t d = 0; d < shape.size(); ++d) {
    TILEJIT_CHECK(shape[d].defined(), kValueError)
        << "buffer '" << name << "': dimension " << d << " is undefined";
  }
  auto node = std::make_shared<BufferNode>();
  node->name = std::move(name);
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->scope = scope;
  node->param = param;
  node->init = init;
  node->span = std::move(span);
  node->id = g_next_buffer_id.fetch_add(1, std::memory_order_relaxed);
  return Buffer(std::shared_ptr<const BufferNode>(std::move(node)));
}

Buffer Buffer::with_layout(Layout layout) const {
  auto node = std::make_shared<BufferNode>(*node_);
  node->layout = std::move(layout);
  return Buffer(std::shared_ptr<const BufferNode>(std::move(node)));
}

std::vector<Expr> Region::extents() const {
  if (ranges.empty()) return buffer.defined() ? buffer.shape() : std::vector<Expr>{};
  std::vector<Expr> out;
  if (is_corner()) return out;
  out.reserve(ranges.size());
  for (const Range& r : ranges) out.push_back(r.extent);
  return out;
}

Region whole(const Buffer& buffer) { return Region{buffer, {}}; }

Region region(const Buffer& buffer, std::vector<Range> ranges) {
  return Region{buffer, std::move(ranges)};
}

Region corner(const Buffer& buffer, std::vector<Expr> indices) {
  Region r{buffer, {}};
  r.ranges.reserve(indices.size());
  for (Expr& i : indices) r.ranges.push_back(Range{std::move(i), Expr()});
  return r;
}

Expr load(const Buffer& buffer, std::vector<Expr> indices) {
  TILEJIT_CHECK(buffer.defined(), kValueError) << "load: the buffer is undefined";
  TILEJIT_CHECK(int(indices.size()) == buffer.rank(), kValueError)
      << "load of " << buffer.name() << ": " << indices.size() << " indices for a buffer of rank "
      << buffer.rank();
  for (size_t i = 0; i < indices.size(); ++i) {
    TILEJIT_CHECK(indices[i].defined(), kValueError)
        << "load of " << buffer.name() << ": index " << i << " is undefined";
    TILEJIT_CHECK(indices[i].dtype().is_int(), kTypeError)
        << "load of " << buffer.name() << ": index " << i << " (" << to_string(indices[i])
        << ") has dtype " << indices[i].dtype().name() << "; indices are integers";
  }
  return Expr(std::make_shared<const LoadNode>(buffer, std::move(indices)));
}

}  // namespace tilejit::ir
