// KernelAbi: see kernel_abi.h (Note [Kernel ABI]).
#include "tilejit/runtime/kernel_abi.h"

#include "tilejit/runtime/abi_block.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "tilejit/core/error.h"
#include "tilejit/runtime/disk_cache.h"

namespace tilejit::runtime {
namespace {

// The serialisation: a 24-byte header (magic, version, body size, body
// checksum), then the body:
//   u32 block_bytes, u32 block_align, u32 #args,
//   per arg: u8 kind, u8 dtype code, u8 dtype bits, u16 dtype lanes,
//            i32 source, u32 offset, u32 size, u32 align, string name;
//   u32 #launches,
//   per launch: string entry, i32 grid[3], i32 smem, u32 smem_bytes, i32 threads[3];
// a string being u32 length then its bytes. Little-endian throughout.
constexpr char kMagic[8] = {'T', 'J', 'I', 'T', 'A', 'B', 'I', '\n'};
constexpr size_t kHeaderBytes = 24;
// Names are C identifiers; anything longer is not one of ours.
constexpr uint32_t kMaxName = 4096;

bool is_pow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) u8(uint8_t(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(uint8_t(v >> (8 * i)));
  }
  void i32(int v) { u32(uint32_t(v)); }
  void str(const std::string& s) {
    u32(uint32_t(s.size()));
    out_ += s;
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Reads the body; every read fails (and stays failed) past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  uint64_t le(int n) {
    if (!ok_ || in_.size() - pos_ < size_t(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(in_[pos_ + size_t(i)])) << (8 * i);
    pos_ += size_t(n);
    return v;
  }
  uint8_t u8() { return uint8_t(le(1)); }
  uint16_t u16() { return uint16_t(le(2)); }
  uint32_t u32() { return uint32_t(le(4)); }
  uint64_t u64() { return le(8); }
  int i32() { return int(int32_t(u32())); }
  std::string str() {
    const uint32_t n = u32();
    if (!ok_ || n > kMaxName || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

uint64_t read_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

}  // namespace

const char* abi_arg_kind_name(AbiArgKind kind) noexcept {
  switch (kind) {
    case AbiArgKind::kPointer: return "pointer";
    case AbiArgKind::kSymbol: return "symbol";
    case AbiArgKind::kScalar: return "scalar";
    case AbiArgKind::kStruct: return "struct";
    case AbiArgKind::kTensorMap: return "tensor map";
  }
  return "?";
}

AbiArg& KernelAbi::add(AbiArgKind kind, std::string name, int source, uint32_t size,
                       uint32_t align, DataType dtype) {
  TILEJIT_ICHECK(is_pow2(align)) << "KernelAbi::add: alignment " << align << " of '" << name
                                 << "' is not a power of two";
  const uint64_t offset = (uint64_t(block_bytes) + align - 1) / align * align;
  const uint64_t new_align = std::max(block_align, align);
  const uint64_t end = (offset + size + new_align - 1) / new_align * new_align;
  TILEJIT_CHECK(end <= kMaxBlockBytes, kValueError)
      << "kernel argument '" << name << "' (" << size << " bytes at offset " << offset
      << ") does not fit in the " << kMaxBlockBytes << "-byte argument block";
  AbiArg arg;
  arg.kind = kind;
  arg.name = std::move(name);
  arg.source = source;
  arg.dtype = dtype;
  arg.offset = uint32_t(offset);
  arg.size = size;
  arg.align = align;
  args.push_back(std::move(arg));
  block_align = uint32_t(new_align);
  block_bytes = uint32_t(end);
  return args.back();
}

static_assert(int(AbiArgKind::kPointer) == tilejit_abi::kArgPointer &&
              int(AbiArgKind::kSymbol) == tilejit_abi::kArgSymbol &&
              int(AbiArgKind::kScalar) == tilejit_abi::kArgScalar &&
              int(AbiArgKind::kStruct) == tilejit_abi::kArgStruct &&
              int(AbiArgKind::kTensorMap) == tilejit_abi::kArgTensorMap,
              "one set of argument kinds (abi_block.h)");

void KernelAbi::pack(void* const* values, const int64_t* symbols, void* block) const noexcept {
  tilejit_abi::pack_block(args.data(), int(args.size()), values, symbols,
                          static_cast<unsigned char*>(block), block_bytes);
}

AbiPacker::AbiPacker(const KernelAbi& abi)
    : abi_(&abi),
      num_values_(abi.num_values()),
      dense_(abi.is_dense(abi.num_values(), abi.num_symbols())) {}

void AbiPacker::pack(void* const* values, const int64_t* symbols, void* block) const noexcept {
  tilejit_abi::pack_block(abi_->args.data(), int(abi_->args.size()), values, symbols,
                          static_cast<unsigned char*>(block), abi_->block_bytes, dense_,
                          num_values_);
}

bool KernelAbi::is_dense(int num_values, int num_symbols) const noexcept {
  if (args.size() != size_t(num_values) + size_t(num_symbols)) return false;
  if (block_bytes != 8 * args.size()) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const AbiArg& a = args[i];
    const bool value = int(i) < num_values;
    const int source = value ? int(i) : int(i) - num_values;
    if (a.kind != (value ? AbiArgKind::kPointer : AbiArgKind::kSymbol) || a.source != source ||
        a.offset != 8 * i || a.size != 8) {
      return false;
    }
  }
  return true;
}

int KernelAbi::num_values() const noexcept {
  int n = 0;
  for (const AbiArg& a : args) {
    if (a.kind != AbiArgKind::kSymbol) n = std::max(n, a.source + 1);
  }
  return n;
}

int KernelAbi::num_symbols() const noexcept {
  int n = 0;
  for (const AbiArg& a : args) {
    if (a.kind == AbiArgKind::kSymbol) n = std::max(n, a.source + 1);
  }
  return n;
}

int KernelAbi::num_results() const noexcept {
  int n = 0;
  for (const AbiLaunch& l : launches) {
    for (int r : {l.grid[0], l.grid[1], l.grid[2], l.smem}) n = std::max(n, r + 1);
  }
  return n;
}

std::string KernelAbi::problem() const {
  if (!is_pow2(block_align) || block_bytes % block_align != 0 || block_bytes > kMaxBlockBytes) {
    return "the block is " + std::to_string(block_bytes) + " bytes aligned to " +
           std::to_string(block_align);
  }
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  for (const AbiArg& a : args) {
    const std::string what = std::string(abi_arg_kind_name(a.kind)) + " '" + a.name + "'";
    if (a.source < 0 || a.source >= 1 << 16) return what + " has source " + std::to_string(a.source);
    if (!is_pow2(a.align) || a.align > block_align || a.offset % a.align != 0) {
      return what + " is at offset " + std::to_string(a.offset) + " with alignment " +
             std::to_string(a.align);
    }
    if (uint64_t(a.offset) + a.size > block_bytes) return what + " ends past the block";
    const bool eight = a.kind == AbiArgKind::kPointer || a.kind == AbiArgKind::kSymbol;
    if ((eight && a.size != 8) || (a.kind == AbiArgKind::kScalar && a.size != a.dtype.bytes()) ||
        (a.kind == AbiArgKind::kStruct && a.size == 0) ||
        (a.kind == AbiArgKind::kTensorMap && (a.size != 128 || a.align != 64)) ||
        uint8_t(a.kind) > 4) {
      return what + " has " + std::to_string(a.size) + " bytes";
    }
    if (a.kind == AbiArgKind::kTensorMap) {
      const AbiTensorMap& t = a.tensor_map;
      const int bytes = a.dtype.bytes();
      if (t.rank < 1 || t.rank > AbiTensorMap::kMaxRank || (bytes != 1 && bytes != 2 && bytes != 4) ||
          (t.swizzle != 0 && t.swizzle != 32 && t.swizzle != 64 && t.swizzle != 128)) {
        return what + " describes a rank-" + std::to_string(t.rank) + " tensor of " +
               std::to_string(bytes) + "-byte elements swizzled in " +
               std::to_string(t.swizzle) + "-byte rows";
      }
      for (int d = 0; d < t.rank; ++d) {
        if (t.box[d] < 1 || t.box[d] > 256) return what + " has a box of " + std::to_string(t.box[d]);
      }
    }
    spans.emplace_back(a.offset, a.offset + a.size);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first < spans[i - 1].second) return "two arguments overlap";
  }
  if (launches.empty() || launches.size() > size_t(kMaxLaunches)) {
    return std::to_string(launches.size()) + " launches";
  }
  for (const AbiLaunch& l : launches) {
    if (l.entry.empty()) return "a launch without an entry name";
    for (int t : l.threads) {
      if (t < 1) return "launch '" + l.entry + "' has " + std::to_string(t) + " threads";
    }
    for (int r : {l.grid[0], l.grid[1], l.grid[2], l.smem}) {
      if (r < 0) return "launch '" + l.entry + "' reads result " + std::to_string(r);
    }
  }
  return "";
}

std::string KernelAbi::str() const {
  std::ostringstream os;
  os << "block " << block_bytes << " bytes:";
  for (size_t i = 0; i < args.size(); ++i) {
    const AbiArg& a = args[i];
    os << (i ? ", " : " ") << abi_arg_kind_name(a.kind) << " " << a.name;
    if (a.kind == AbiArgKind::kScalar) os << " " << a.dtype.name();
    if (a.kind == AbiArgKind::kStruct) os << " (" << a.size << " bytes, align " << a.align << ")";
    if (a.kind == AbiArgKind::kTensorMap) {
      const AbiTensorMap& t = a.tensor_map;
      os << " (" << a.dtype.name() << ", dims";
      for (int d = 0; d < t.rank; ++d) {
        os << (d ? " " : " [") << (t.dims[d] >= 0 ? std::to_string(t.dims[d])
                                                 : "s" + std::to_string(-1 - t.dims[d]));
      }
      os << "], box";
      for (int d = 0; d < t.rank; ++d) os << (d ? " " : " [") << t.box[d];
      os << "], swizzle " << int(t.swizzle) << ")";
    }
    os << " @" << a.offset;
  }
  for (const AbiLaunch& l : launches) {
    os << "; launch " << l.entry << " grid (r" << l.grid[0] << ", r" << l.grid[1] << ", r"
       << l.grid[2] << ") threads (" << l.threads[0] << ", " << l.threads[1] << ", "
       << l.threads[2] << ") smem r" << l.smem;
    if (l.smem_bytes != 0) os << " + " << l.smem_bytes;
  }
  return os.str();
}

std::string KernelAbi::serialize() const {
  Writer body;
  body.u32(block_bytes);
  body.u32(block_align);
  body.u32(uint32_t(args.size()));
  for (const AbiArg& a : args) {
    body.u8(uint8_t(a.kind));
    body.u8(a.dtype.code);
    body.u8(a.dtype.bits);
    body.u16(a.dtype.lanes);
    body.i32(a.source);
    body.u32(a.offset);
    body.u32(a.size);
    body.u32(a.align);
    body.str(a.name);
    if (a.kind == AbiArgKind::kTensorMap) {
      body.u8(a.tensor_map.rank);
      body.u8(a.tensor_map.swizzle);
      for (int d = 0; d < AbiTensorMap::kMaxRank; ++d) {
        body.u64(uint64_t(a.tensor_map.dims[d]));
        body.u32(a.tensor_map.box[d]);
      }
    }
  }
  body.u32(uint32_t(launches.size()));
  for (const AbiLaunch& l : launches) {
    body.str(l.entry);
    for (int g : l.grid) body.i32(g);
    body.i32(l.smem);
    body.u32(l.smem_bytes);
    for (int t : l.threads) body.i32(t);
  }
  Writer out;
  out.bytes().append(kMagic, sizeof kMagic);
  out.u32(kVersion);
  out.u32(uint32_t(body.bytes().size()));
  out.u64(hash64(body.bytes()));
  out.bytes() += body.bytes();
  return std::move(out.bytes());
}

std::optional<KernelAbi> KernelAbi::deserialize(std::string_view bytes, size_t* consumed) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return std::nullopt;
  }
  Reader header(bytes.substr(8, 8));
  const uint32_t version = header.u32();
  const uint32_t size = header.u32();
  if (version != kVersion || bytes.size() - kHeaderBytes < size) return std::nullopt;
  const std::string_view body_bytes = bytes.substr(kHeaderBytes, size);
  if (read_le64(bytes.data() + 16) != hash64(body_bytes)) return std::nullopt;

  Reader in(body_bytes);
  KernelAbi abi;
  abi.block_bytes = in.u32();
  abi.block_align = in.u32();
  const uint32_t num_args = in.u32();
  if (!in.ok() || num_args > kMaxBlockBytes) return std::nullopt;
  for (uint32_t i = 0; i < num_args && in.ok(); ++i) {
    AbiArg a;
    a.kind = AbiArgKind(in.u8());
    a.dtype.code = in.u8();
    a.dtype.bits = in.u8();
    a.dtype.lanes = in.u16();
    a.source = in.i32();
    a.offset = in.u32();
    a.size = in.u32();
    a.align = in.u32();
    a.name = in.str();
    if (a.kind == AbiArgKind::kTensorMap) {
      a.tensor_map.rank = in.u8();
      a.tensor_map.swizzle = in.u8();
      for (int d = 0; d < AbiTensorMap::kMaxRank; ++d) {
        a.tensor_map.dims[d] = int64_t(in.u64());
        a.tensor_map.box[d] = in.u32();
      }
    }
    abi.args.push_back(std::move(a));
  }
  const uint32_t num_launches = in.u32();
  if (!in.ok() || num_launches > uint32_t(kMaxLaunches)) return std::nullopt;
  for (uint32_t i = 0; i < num_launches && in.ok(); ++i) {
    AbiLaunch l;
    l.entry = in.str();
    for (int& g : l.grid) g = in.i32();
    l.smem = in.i32();
    l.smem_bytes = in.u32();
    for (int& t : l.threads) t = in.i32();
    abi.launches.push_back(std::move(l));
  }
  if (!in.ok() || !in.at_end() || !abi.problem().empty()) return std::nullopt;
  if (consumed != nullptr) *consumed = kHeaderBytes + size;
  return abi;
}

}  // namespace tilejit::runtime
