// Callee copies in a cubin (callee_copies.h). The cubin is an ELF64 file (EM_CUDA); it is read
// and written with glibc's <elf.h> layouts. The kernel's text section grows by the copies, and
// every file offset past its old end (later sections, the section and program header tables)
// moves by the same amount, a multiple of every section's alignment.
//
// SM 9.0 control-flow encodings used here (read off ptxas 13 output; the tests check them with
// nvdisasm): the low 12 bits are the opcode (0x944 CALL.REL, 0x950 RET.REL, 0x947 BRA, 0x945
// BSSY, 0x802 MOV with a 32-bit immediate); a PC-relative target is pc + 16 + 4·w, with the signed
// word offset w split over bits 16-23 (its low byte) and 34-63 (the rest) of the first 64-bit
// word, and its sign repeated in bits 0-17 of the second. RET.REL.NODEC Rn jumps to Rn plus its
// PC-relative base (the section's start), and a caller puts its return PC into Rn with a MOV
// immediate just before the CALL, so both are rewritten in a copy; targets inside the copied
// function are relative and move with it.
#include "argus/sass/callee_copies.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace argus::sass {
namespace {

constexpr std::uint64_t kInstruction = 16;
constexpr std::uint32_t kCallRel = 0x944, kRetRel = 0x950, kBra = 0x947, kBssy = 0x945,
                        kMovImm = 0x802;

template <typename T>
bool readAt(std::span<const std::uint8_t> bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

template <typename T>
void writeAt(std::vector<std::uint8_t>& bytes, std::uint64_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

/// The cubin's headers, checked.
struct Elf {
  Elf64_Ehdr header{};
  std::vector<Elf64_Shdr> sections;
  std::vector<Elf64_Phdr> segments;
  std::vector<std::string> names;  ///< Section names.
};

Result<Elf> readElf(std::span<const std::uint8_t> bytes) {
  Elf elf;
  if (!readAt(bytes, 0, elf.header) || std::memcmp(elf.header.e_ident, ELFMAG, SELFMAG) != 0 ||
      elf.header.e_ident[EI_CLASS] != ELFCLASS64)
    return fail("cubin", "not a 64-bit ELF file (a cubin from ptxas or nvcc -cubin)");
  if (elf.header.e_machine != EM_CUDA)
    return fail("cubin", fmt::format("an ELF file for machine {}, not CUDA ({})",
                                     elf.header.e_machine, EM_CUDA));
  for (unsigned i = 0; i < elf.header.e_shnum; ++i) {
    Elf64_Shdr s{};
    if (!readAt(bytes, elf.header.e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr), s))
      return fail("cubin", fmt::format("section header {} lies past the file's end", i));
    if (s.sh_type != SHT_NOBITS && (s.sh_offset > bytes.size() || s.sh_size > bytes.size() ||
                                    s.sh_offset + s.sh_size > bytes.size()))
      return fail("cubin", fmt::format("section {} lies past the file's end", i));
    elf.sections.push_back(s);
  }
  for (unsigned i = 0; i < elf.header.e_phnum; ++i) {
    Elf64_Phdr p{};
    if (!readAt(bytes, elf.header.e_phoff + std::uint64_t{i} * sizeof(Elf64_Phdr), p))
      return fail("cubin", fmt::format("program header {} lies past the file's end", i));
    elf.segments.push_back(p);
  }
  if (elf.header.e_shstrndx >= elf.sections.size()) return fail("cubin", "no section name table");
  const Elf64_Shdr& strings = elf.sections[elf.header.e_shstrndx];
  for (const auto& s : elf.sections) {
    if (s.sh_name >= strings.sh_size) return fail("cubin", "a section name lies past its table");
    const char* begin = reinterpret_cast<const char*>(bytes.data() + strings.sh_offset + s.sh_name);
    elf.names.emplace_back(begin, strnlen(begin, strings.sh_size - s.sh_name));
  }
  return elf;
}

std::optional<unsigned> sectionNamed(const Elf& elf, std::string_view name) {
  for (unsigned i = 0; i < elf.names.size(); ++i)
    if (elf.names[i] == name) return i;
  return std::nullopt;
}

/// One instruction's two 64-bit words.
struct Instruction {
  std::uint64_t lo = 0, hi = 0;
  [[nodiscard]] std::uint32_t opcode() const { return static_cast<std::uint32_t>(lo & 0xfff); }
  [[nodiscard]] bool relative() const {
    const auto op = opcode();
    return op == kCallRel || op == kRetRel || op == kBra || op == kBssy;
  }
  /// The signed word offset of a PC-relative instruction.
  [[nodiscard]] std::int64_t words() const {
    const std::uint64_t raw = ((lo >> 16) & 0xff) | (((lo >> 34) & 0x3fffffff) << 8);
    return (raw & (std::uint64_t{1} << 37)) != 0
               ? static_cast<std::int64_t>(raw) - (std::int64_t{1} << 38)
               : static_cast<std::int64_t>(raw);
  }
  void setWords(std::int64_t w) {
    const auto u = static_cast<std::uint64_t>(w);
    lo = (lo & ~(std::uint64_t{0xff} << 16) & ~(std::uint64_t{0x3fffffff} << 34)) |
         ((u & 0xff) << 16) | (((u >> 8) & 0x3fffffff) << 34);
    hi = (hi & ~std::uint64_t{0x3ffff}) | (w < 0 ? std::uint64_t{0x3ffff} : 0);
  }
  [[nodiscard]] std::uint64_t target(std::uint64_t pc) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(pc + kInstruction) + 4 * words());
  }
  void setTarget(std::uint64_t pc, std::uint64_t target) {
    setWords((static_cast<std::int64_t>(target) - static_cast<std::int64_t>(pc + kInstruction)) /
             4);
  }
  [[nodiscard]] std::uint32_t immediate() const { return static_cast<std::uint32_t>(lo >> 32); }
  void setImmediate(std::uint32_t v) { lo = (lo & 0xffffffffULL) | (std::uint64_t{v} << 32); }
};

Instruction load(std::span<const std::uint8_t> text, std::uint64_t pc) {
  Instruction i;
  (void)readAt(text, pc, i.lo);
  (void)readAt(text, pc + 8, i.hi);
  return i;
}

void store(std::vector<std::uint8_t>& text, std::uint64_t pc, const Instruction& i) {
  writeAt(text, pc, i.lo);
  writeAt(text, pc + 8, i.hi);
}

/// The kernel's text section and its functions.
struct KernelText {
  unsigned section = 0;
  std::vector<CubinFunction> functions;
};

Result<KernelText> kernelText(std::span<const std::uint8_t> bytes, const Elf& elf,
                              std::string_view kernel) {
  KernelText out;
  auto text = sectionNamed(elf, fmt::format(".text.{}", kernel));
  if (!text)
    return fail("cubin", fmt::format("no text section `.text.{}`: the cubin has no "
                                     "kernel `{}`",
                                     kernel, kernel));
  out.section = *text;
  auto symtab = std::find_if(elf.sections.begin(), elf.sections.end(),
                             [](const Elf64_Shdr& s) { return s.sh_type == SHT_SYMTAB; });
  if (symtab == elf.sections.end() || symtab->sh_link >= elf.sections.size())
    return fail("cubin", "no symbol table");
  const Elf64_Shdr& strings = elf.sections[symtab->sh_link];
  for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= symtab->sh_size; at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym{};
    (void)readAt(bytes, symtab->sh_offset + at, sym);
    if (sym.st_shndx != *text || ELF64_ST_TYPE(sym.st_info) != STT_FUNC) continue;
    if (sym.st_name >= strings.sh_size) return fail("cubin", "a symbol name lies past its table");
    const char* name =
        reinterpret_cast<const char*>(bytes.data() + strings.sh_offset + sym.st_name);
    out.functions.push_back({std::string(name, strnlen(name, strings.sh_size - sym.st_name)),
                             sym.st_value, sym.st_size});
  }
  std::ranges::stable_sort(out.functions, [&](const CubinFunction& a, const CubinFunction& b) {
    return (a.symbol == kernel) > (b.symbol == kernel);
  });
  if (out.functions.empty() || out.functions.front().symbol != kernel)
    return fail("cubin", fmt::format("no function symbol `{}` in `.text.{}`", kernel, kernel));
  return out;
}

/// Why `f`'s code cannot be copied, if it cannot: a relocation or a `.nv.info` PC list into it.
std::optional<std::string> whyNotCopyable(std::span<const std::uint8_t> bytes, const Elf& elf,
                                          unsigned text, std::string_view kernel,
                                          const CubinFunction& f) {
  const auto inside = [&](std::uint64_t pc) { return pc >= f.offset && pc < f.offset + f.size; };
  for (const auto& s : elf.sections) {
    if ((s.sh_type != SHT_RELA && s.sh_type != SHT_REL) || s.sh_info != text) continue;
    const std::uint64_t entry = s.sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
    for (std::uint64_t at = 0; at + entry <= s.sh_size; at += entry) {
      Elf64_Rel rel{};
      (void)readAt(bytes, s.sh_offset + at, rel);
      if (inside(rel.r_offset))
        return fmt::format(
            "a relocation (type {}) patches its instruction at {:#x}; a copy would "
            "need its own",
            ELF64_R_TYPE(rel.r_info), rel.r_offset);
    }
  }
  // .nv.info.<kernel>: records of a format byte, an attribute byte and, for format 4, a 16-bit
  // size and that many bytes. Attributes that list instruction offsets (exits, barriers, ...)
  // would need the copies' offsets too.
  if (auto info = sectionNamed(elf, fmt::format(".nv.info.{}", kernel))) {
    const Elf64_Shdr& s = elf.sections[*info];
    for (std::uint64_t at = 0; at + 2 <= s.sh_size;) {
      const std::uint8_t format = bytes[s.sh_offset + at], attribute = bytes[s.sh_offset + at + 1];
      std::uint64_t payload = 0, size = 2;
      if (format == 0x04) {
        std::uint16_t n = 0;
        if (!readAt(bytes, s.sh_offset + at + 2, n)) break;
        payload = at + 4;
        size = 4 + n;
        for (std::uint64_t v = 0; v + 4 <= n; v += 4) {
          std::uint32_t value = 0;
          (void)readAt(bytes, s.sh_offset + payload + v, value);
          if (value % kInstruction == 0 && inside(value))
            return fmt::format(
                "`.nv.info.{}` attribute {:#04x} lists its instruction at {:#x} "
                "(`cuobjdump -elf` names the attribute); a copy would need its own "
                "entry",
                kernel, attribute, value);
        }
      } else if (format == 0x03) {
        size = 4;
      }
      at += size;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<std::string>> cubinKernels(std::span<const std::uint8_t> cubin) {
  auto elf = readElf(cubin);
  if (!elf) return std::unexpected(elf.error());
  std::vector<std::string> kernels;
  for (unsigned i = 0; i < elf->names.size(); ++i)
    if (elf->names[i].starts_with(".text.") && elf->sections[i].sh_type == SHT_PROGBITS)
      kernels.push_back(elf->names[i].substr(6));
  return kernels;
}

Result<std::vector<CubinFunction>> cubinFunctions(std::span<const std::uint8_t> cubin,
                                                  std::string_view kernel) {
  auto elf = readElf(cubin);
  if (!elf) return std::unexpected(elf.error());
  auto text = kernelText(cubin, *elf, kernel);
  if (!text) return std::unexpected(text.error());
  return text->functions;
}

Result<std::uint64_t> callTarget(std::span<const std::uint8_t> cubin, std::string_view kernel,
                                 std::uint64_t pc) {
  auto elf = readElf(cubin);
  if (!elf) return std::unexpected(elf.error());
  auto text = kernelText(cubin, *elf, kernel);
  if (!text) return std::unexpected(text.error());
  const Elf64_Shdr& s = elf->sections[text->section];
  if (pc % kInstruction != 0 || pc + kInstruction > s.sh_size)
    return fail("cubin", fmt::format("{:#x} is not an instruction of `{}`", pc, kernel));
  const Instruction i = load(cubin.subspan(s.sh_offset, s.sh_size), pc);
  if (i.opcode() != kCallRel)
    return fail("cubin",
                fmt::format("the instruction at {:#x} of `{}` is not a CALL.REL", pc, kernel));
  return i.target(pc);
}

/// The kernel's text, growing by one copy at a time (copy), then written into a new cubin
/// (finish).
class TextPatcher {
 public:
  static Result<TextPatcher> open(std::span<const std::uint8_t> cubin, std::string_view kernel) {
    auto elf = readElf(cubin);
    if (!elf) return std::unexpected(elf.error());
    auto kt = kernelText(cubin, *elf, kernel);
    if (!kt) return std::unexpected(kt.error());
    return TextPatcher(cubin, kernel, std::move(*elf), std::move(*kt));
  }

  [[nodiscard]] const std::vector<CubinFunction>& functions() const { return kt_.functions; }
  /// The reference's text section.
  [[nodiscard]] std::span<const std::uint8_t> original() const { return original_; }

  /// Appends a copy of `request.callee` and sends the calls at `request.callSites` to it.
  Result<CalleeCopy> copy(const CalleeCopyRequest& request) {
    const std::string_view kernel = kernel_;
    const std::string prefixed = fmt::format("${}${}", kernel, request.callee);
    auto f = std::ranges::find_if(kt_.functions, [&](const CubinFunction& fn) {
      return fn.symbol == request.callee || fn.symbol == prefixed;
    });
    if (f == kt_.functions.end() || f == kt_.functions.begin()) {
      std::vector<std::string> names;
      for (auto it = kt_.functions.begin() + 1; it != kt_.functions.end(); ++it)
        names.push_back(it->symbol);
      return fail(
          "cubin",
          fmt::format("`{}` is not a callee in `.text.{}` (its callees: {})", request.callee,
                      kernel, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
    if (auto why = whyNotCopyable(cubin_, elf_, kt_.section, kernel, *f))
      return fail("cubin", fmt::format("`{}` cannot be copied: {}", f->symbol, *why));
    if (f->offset % kInstruction != 0 || f->size % kInstruction != 0 ||
        f->offset + f->size > original_.size())
      return fail("cubin", fmt::format("`{}` ({:#x}, {} bytes) is not whole instructions of the "
                                       "section",
                                       f->symbol, f->offset, f->size));
    // Place the copy at the original's offset modulo 128.
    std::uint64_t at = text_.size();
    at += (f->offset % 128 + 128 - at % 128) % 128;
    for (std::uint64_t pc = text_.size(); pc < at; pc += kInstruction) {
      text_.resize(pc + kInstruction);
      store(text_, pc, filler_);
    }
    text_.insert(text_.end(), original_.begin() + static_cast<std::ptrdiff_t>(f->offset),
                 original_.begin() + static_cast<std::ptrdiff_t>(f->offset + f->size));
    const CalleeCopy placed{*f, at, request.callSites, {}};
    // Targets outside the function keep their absolute place; return PCs of calls made from the
    // copy become the copy's.
    for (std::uint64_t d = 0; d < f->size; d += kInstruction) {
      const std::uint64_t from = f->offset + d, to = at + d;
      Instruction i = load(original_, from);
      if (!i.relative()) continue;
      const std::uint64_t target = i.target(from);
      if (target >= f->offset && target < f->offset + f->size) continue;
      i.setTarget(to, target);
      store(text_, to, i);
      if (i.opcode() != kCallRel) continue;
      bool found = false;
      for (std::uint64_t back = d; back >= kInstruction && !found; back -= kInstruction) {
        Instruction mov = load(original_, f->offset + back - kInstruction);
        if (mov.opcode() == kMovImm && mov.immediate() == from + kInstruction) {
          mov.setImmediate(static_cast<std::uint32_t>(to + kInstruction));
          store(text_, at + back - kInstruction, mov);
          found = true;
        }
      }
      if (!found)
        return fail("cubin", fmt::format("`{}` calls at {:#x} without a MOV of its return PC "
                                         "before the call; its copy cannot return there",
                                         f->symbol, from));
    }
    // The call sites: the kernel's own code, or an earlier copy (where the call still names what
    // the reference calls).
    for (const std::uint64_t site : request.callSites) {
      std::uint64_t referenceSite = site;
      for (const auto& c : copies_)
        if (site >= c.offset && site < c.offset + c.original.size)
          referenceSite = c.referencePc(site);
      if (site % kInstruction != 0 || site + kInstruction > text_.size() ||
          (referenceSite == site && site >= original_.size()))
        return fail("cubin", fmt::format("call site {:#x} is not an instruction of `{}` or of a "
                                         "copy",
                                         site, kernel));
      const Instruction reference = load(original_, referenceSite);
      if (reference.opcode() != kCallRel || reference.target(referenceSite) != f->offset)
        return fail("cubin",
                    fmt::format("the instruction at {:#x} is not a CALL.REL to `{}` ({:#x})", site,
                                f->symbol, f->offset));
      Instruction call = load(text_, site);
      call.setTarget(site, at);
      store(text_, site, call);
    }
    copies_.push_back(placed);
    return placed;
  }

  /// The cubin with the copies.
  [[nodiscard]] PatchedCubin finish() const {
    PatchedCubin out;
    out.copies = copies_;
    // Rewrite the file: the text grows by `grow`; what follows it moves by `shift`, a multiple of
    // every alignment in the file.
    const std::uint64_t grow = text_.size() - original_.size();
    std::uint64_t align = 8;
    for (const auto& s : elf_.sections) align = std::max<std::uint64_t>(align, s.sh_addralign);
    for (const auto& p : elf_.segments) align = std::max<std::uint64_t>(align, p.p_align);
    const std::uint64_t shift = (grow + align - 1) / align * align;
    const std::uint64_t end = header_.sh_offset + header_.sh_size;
    std::vector<std::uint8_t> bytes(cubin_.begin(),
                                    cubin_.begin() + static_cast<std::ptrdiff_t>(end));
    std::copy(text_.begin() + static_cast<std::ptrdiff_t>(original_.size()), text_.end(),
              std::back_inserter(bytes));
    bytes.resize(end + shift, 0);
    std::copy(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(original_.size()),
              bytes.begin() + static_cast<std::ptrdiff_t>(header_.sh_offset));
    bytes.insert(bytes.end(), cubin_.begin() + static_cast<std::ptrdiff_t>(end), cubin_.end());
    const auto moved = [&](std::uint64_t offset) {
      return offset >= end ? offset + shift : offset;
    };

    Elf64_Ehdr header = elf_.header;
    header.e_shoff = moved(header.e_shoff);
    header.e_phoff = moved(header.e_phoff);
    writeAt(bytes, 0, header);
    for (unsigned i = 0; i < elf_.sections.size(); ++i) {
      Elf64_Shdr s = elf_.sections[i];
      if (i == kt_.section)
        s.sh_size = text_.size();
      else if (s.sh_offset >= end)
        s.sh_offset += shift;
      writeAt(bytes, header.e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr), s);
    }
    for (unsigned i = 0; i < elf_.segments.size(); ++i) {
      Elf64_Phdr p = elf_.segments[i];
      if (p.p_offset == header_.sh_offset && p.p_filesz == header_.sh_size) {
        p.p_filesz += grow;
        p.p_memsz += grow;
      } else if (p.p_offset >= end) {
        p.p_offset += shift;
      }
      writeAt(bytes, header.e_phoff + std::uint64_t{i} * sizeof(Elf64_Phdr), p);
    }
    // The kernel's symbol spans its section.
    for (const auto& s : elf_.sections) {
      if (s.sh_type != SHT_SYMTAB) continue;
      const std::uint64_t table = moved(s.sh_offset);
      for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= s.sh_size; at += sizeof(Elf64_Sym)) {
        Elf64_Sym sym{};
        (void)readAt(std::span<const std::uint8_t>(bytes), table + at, sym);
        if (sym.st_shndx == kt_.section && ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
            sym.st_value == 0 && sym.st_size == header_.sh_size) {
          sym.st_size = text_.size();
          writeAt(bytes, table + at, sym);
        }
      }
    }
    out.bytes = std::move(bytes);
    return out;
  }

 private:
  TextPatcher(std::span<const std::uint8_t> cubin, std::string_view kernel, Elf elf, KernelText kt)
      : cubin_(cubin),
        kernel_(kernel),
        elf_(std::move(elf)),
        kt_(std::move(kt)),
        header_(elf_.sections[kt_.section]),
        original_(cubin.subspan(header_.sh_offset, header_.sh_size)),
        text_(original_.begin(), original_.end()),
        // ptxas ends the section with NOPs; padding before a copy repeats the last one.
        filler_(load(original_, header_.sh_size - kInstruction)) {}

  std::span<const std::uint8_t> cubin_;
  std::string kernel_;
  Elf elf_;
  KernelText kt_;
  Elf64_Shdr header_;
  std::span<const std::uint8_t> original_;
  std::vector<std::uint8_t> text_;
  Instruction filler_;
  std::vector<CalleeCopy> copies_;
};

Result<PatchedCubin> copyCallees(std::span<const std::uint8_t> cubin, std::string_view kernel,
                                 const std::vector<CalleeCopyRequest>& requests) {
  auto patcher = TextPatcher::open(cubin, kernel);
  if (!patcher) return std::unexpected(patcher.error());
  for (const auto& request : requests)
    if (auto placed = patcher->copy(request); !placed) return std::unexpected(placed.error());
  return patcher->finish();
}

Result<PatchedCubin> copyCalleesPerCallSite(std::span<const std::uint8_t> cubin,
                                            std::string_view kernel, unsigned maxDepth) {
  auto patcher = TextPatcher::open(cubin, kernel);
  if (!patcher) return std::unexpected(patcher.error());
  const auto& functions = patcher->functions();
  const auto original = patcher->original();
  // The kernel's own code ends where its first callee begins.
  std::uint64_t ownEnd = original.size();
  for (const auto& f : functions)
    if (f.symbol != kernel) ownEnd = std::min(ownEnd, f.offset);
  const auto calleeAt = [&](std::uint64_t offset) -> const CubinFunction* {
    for (const auto& f : functions)
      if (f.symbol != kernel && f.offset == offset) return &f;
    return nullptr;
  };
  /// The calls of reference code [begin, end) to callees, as (reference pc, callee).
  const auto callsIn = [&](std::uint64_t begin, std::uint64_t end) {
    std::vector<std::pair<std::uint64_t, const CubinFunction*>> calls;
    for (std::uint64_t pc = begin; pc + kInstruction <= end; pc += kInstruction) {
      const Instruction i = load(original, pc);
      if (i.opcode() != kCallRel) continue;
      if (const CubinFunction* f = calleeAt(i.target(pc))) calls.emplace_back(pc, f);
    }
    return calls;
  };

  // Copies in the order they are placed; a copy's own calls are copied after it, so that their
  // sites (inside it) are known when they are retargeted.
  struct Pending {
    std::uint64_t site;  ///< In the patched text.
    std::vector<std::uint64_t> context;
    const CubinFunction* callee;
  };
  std::vector<Pending> pending;
  for (const auto& [pc, f] : callsIn(0, ownEnd)) pending.push_back({pc, {pc}, f});
  std::vector<std::vector<std::uint64_t>> contexts;
  for (std::size_t next = 0; next < pending.size(); ++next) {
    auto copy = patcher->copy({pending[next].callee->symbol, {pending[next].site}});
    if (!copy) return std::unexpected(copy.error());
    contexts.push_back(pending[next].context);
    if (pending[next].context.size() < maxDepth)
      for (const auto& [pc, f] :
           callsIn(copy->original.offset, copy->original.offset + copy->original.size)) {
        auto context = pending[next].context;
        context.push_back(pc);
        pending.push_back({copy->offset + (pc - copy->original.offset), std::move(context), f});
      }
  }
  PatchedCubin out = patcher->finish();
  for (std::size_t k = 0; k < out.copies.size(); ++k) out.copies[k].context = contexts[k];
  return out;
}

}  // namespace argus::sass
