// Reading a frame's rule from .eh_frame: the object by _dl_find_object, the FDE by the binary
// search table of .eh_frame_hdr, then the CIE's and FDE's call frame instructions run up to the
// call. Only what x86-64 compilers emit for ordinary frames is followed; anything else (a DWARF
// expression, a signal frame's CIE, an encoding the table does not use) makes the rule
// Unsupported, and the stack is walked with libgcc's unwinder. The tables are the loaded
// objects' own, mapped read-only by the loader: read as they are, each read within its record.
#include "unwind/frame_rules.hpp"

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <cstring>

namespace hotscope::unwind::detail {
namespace {

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)

// DWARF's numbers for x86-64's registers: the frame pointer, the stack pointer.
constexpr std::uint64_t rbp_register = 6;
constexpr std::uint64_t rsp_register = 7;

// Pointer encodings (DW_EH_PE_*): the value's format in the low four bits, how it applies above.
constexpr std::uint8_t pe_absptr = 0x00;
constexpr std::uint8_t pe_uleb128 = 0x01;
constexpr std::uint8_t pe_udata2 = 0x02;
constexpr std::uint8_t pe_udata4 = 0x03;
constexpr std::uint8_t pe_udata8 = 0x04;
constexpr std::uint8_t pe_sleb128 = 0x09;
constexpr std::uint8_t pe_sdata2 = 0x0a;
constexpr std::uint8_t pe_sdata4 = 0x0b;
constexpr std::uint8_t pe_sdata8 = 0x0c;
constexpr std::uint8_t pe_pcrel = 0x10;
constexpr std::uint8_t pe_datarel = 0x30;
constexpr std::uint8_t pe_omit = 0xff;

// Reads a record's bytes, failing (and then reading zeros) past its end.
class Reader {
public:
  Reader(const std::uint8_t* begin, const std::uint8_t* end) : at_(begin), end_(end) {}
  bool failed() const { return failed_; }
  bool done() const { return at_ >= end_; }
  const std::uint8_t* at() const { return at_; }

  template <typename T> T fixed() {
    T value{};
    if (static_cast<std::size_t>(end_ - at_) < sizeof(T)) {
      failed_ = true;
      at_ = end_;
      return value;
    }
    std::memcpy(&value, at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::uint8_t byte() { return fixed<std::uint8_t>(); }

  std::uint64_t uleb() {
    std::uint64_t value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      const std::uint8_t next = byte();
      value |= std::uint64_t{next & 0x7fu} << shift;
      if ((next & 0x80) == 0 || failed_) {
        return value;
      }
    }
    failed_ = true;
    return value;
  }
  std::int64_t sleb() {
    std::uint64_t value = 0;
    unsigned shift = 0;
    std::uint8_t next = 0;
    do {
      next = byte();
      value |= std::uint64_t{next & 0x7fu} << shift;
      shift += 7;
    } while ((next & 0x80) != 0 && shift < 64 && !failed_);
    if (shift < 64 && (next & 0x40) != 0) {
      value |= ~std::uint64_t{0} << shift;
    }
    return static_cast<std::int64_t>(value);
  }
  void skip(std::uint64_t bytes) {
    if (bytes > static_cast<std::size_t>(end_ - at_)) {
      failed_ = true;
      at_ = end_;
      return;
    }
    at_ += bytes;
  }

  // A pointer in `encoding`, pc-relative to where it is read or relative to `data_base`; false
  // for the encodings the tables here do not use (indirect, text- or function-relative).
  bool pointer(std::uint8_t encoding, std::uintptr_t data_base, std::uintptr_t& out) {
    const auto here = reinterpret_cast<std::uintptr_t>(at_);
    std::uint64_t value = 0;
    switch (encoding & 0x0f) {
    case pe_absptr:
      value = fixed<std::uint64_t>();
      break;
    case pe_uleb128:
      value = uleb();
      break;
    case pe_udata2:
      value = fixed<std::uint16_t>();
      break;
    case pe_udata4:
      value = fixed<std::uint32_t>();
      break;
    case pe_udata8:
      value = fixed<std::uint64_t>();
      break;
    case pe_sleb128:
      value = static_cast<std::uint64_t>(sleb());
      break;
    case pe_sdata2:
      value = static_cast<std::uint64_t>(std::int64_t{fixed<std::int16_t>()});
      break;
    case pe_sdata4:
      value = static_cast<std::uint64_t>(std::int64_t{fixed<std::int32_t>()});
      break;
    case pe_sdata8:
      value = fixed<std::uint64_t>();
      break;
    default:
      return false;
    }
    switch (encoding & 0x70) {
    case 0:
      break;
    case pe_pcrel:
      value += here;
      break;
    case pe_datarel:
      value += data_base;
      break;
    default:
      return false;
    }
    out = static_cast<std::uintptr_t>(value);
    return (encoding & 0x80) == 0 && !failed_;
  }

private:
  const std::uint8_t* at_;
  const std::uint8_t* end_;
  bool failed_ = false;
};

// How a register the walk needs is recovered in a row of the CFI table.
struct RegisterRule {
  enum class How : std::uint8_t { Same, Offset, Undefined, Other };
  How how = How::Same;
  std::int64_t offset = 0; // from the CFA, for Offset
};

// Before the CIE's instructions: no CFA and no return address, which they always define.
struct Row {
  std::uint64_t cfa_register = ~std::uint64_t{0};
  std::int64_t cfa_offset = 0;
  bool cfa_expression = false;
  RegisterRule rbp;
  RegisterRule return_address{RegisterRule::How::Other, 0};
};

struct Cie {
  std::uint64_t code_alignment = 1;
  std::int64_t data_alignment = -8;
  std::uint64_t return_register = 16;
  std::uint8_t fde_encoding = pe_absptr;
  bool augmented = false; // 'z': the FDE has augmentation data, with its length first
  const std::uint8_t* instructions = nullptr;
  const std::uint8_t* end = nullptr;
};

// One record (CIE or FDE) at `at`: its contents after the length, or false (a 64-bit or empty
// record, which the tables here do not have).
bool record(const std::uint8_t* at, const std::uint8_t*& begin, const std::uint8_t*& end) {
  std::uint32_t length = 0;
  std::memcpy(&length, at, sizeof length);
  if (length == 0 || length == 0xffffffffu) {
    return false;
  }
  begin = at + sizeof length;
  end = begin + length;
  return true;
}

bool read_cie(const std::uint8_t* at, Cie& cie) {
  const std::uint8_t* begin = nullptr;
  const std::uint8_t* end = nullptr;
  if (!record(at, begin, end)) {
    return false;
  }
  Reader read(begin, end);
  const auto id = read.fixed<std::uint32_t>();
  const std::uint8_t version = read.byte();
  if (id != 0 || (version != 1 && version != 3)) {
    return false;
  }
  const auto* augmentation = reinterpret_cast<const char*>(read.at());
  const std::size_t augmentation_length =
      strnlen(augmentation, static_cast<std::size_t>(end - read.at()));
  read.skip(augmentation_length + 1);
  cie.code_alignment = read.uleb();
  cie.data_alignment = read.sleb();
  cie.return_register = version == 1 ? read.byte() : read.uleb();
  if (augmentation_length > 0) {
    if (augmentation[0] != 'z') {
      return false;
    }
    cie.augmented = true;
    const std::uint64_t data_length = read.uleb();
    const std::uint8_t* data_end = read.at() + data_length;
    for (std::size_t i = 1; i < augmentation_length && !read.failed(); ++i) {
      switch (augmentation[i]) {
      case 'R':
        cie.fde_encoding = read.byte();
        break;
      case 'L':
        read.byte();
        break;
      case 'P': {
        // Only skipped: its format is enough, whatever it is relative to.
        const std::uint8_t encoding = read.byte();
        std::uintptr_t personality = 0;
        if (!read.pointer(encoding & 0x0f, 0, personality)) {
          return false;
        }
        break;
      }
      default:
        return false; // 'S' (a signal frame) and anything unknown
      }
    }
    if (read.failed() || read.at() > data_end) {
      return false;
    }
    read.skip(static_cast<std::uint64_t>(data_end - read.at()));
  }
  cie.instructions = read.at();
  cie.end = end;
  return !read.failed();
}

// Runs call frame instructions on `row` up to the row for `target` (`location` advancing from
// the function's start; no advance in a CIE). False for what the walk does not follow.
class Program {
public:
  Program(const Cie& cie, const Row& initial) : cie_(cie), initial_(initial) {}

  bool run(Reader read, Row& row, std::uintptr_t& location, std::uintptr_t target) {
    while (!read.done() && location <= target) {
      const std::uint8_t op = read.byte();
      const std::uint8_t operand = op & 0x3f;
      switch (op >> 6) {
      case 1:
        location += operand * cie_.code_alignment;
        continue; // DW_CFA_advance_loc
      case 2:
        set_offset(row, operand, static_cast<std::int64_t>(read.uleb()));
        continue;
      case 3:
        restore(row, operand);
        continue;
      default:
        break;
      }
      if (!extended(read, op, row, location)) {
        return false;
      }
    }
    return !read.failed();
  }

private:
  void set(Row& row, std::uint64_t reg, RegisterRule rule) {
    if (reg == rbp_register) {
      row.rbp = rule;
    } else if (reg == cie_.return_register) {
      row.return_address = rule;
    }
  }
  void set_offset(Row& row, std::uint64_t reg, std::int64_t factored) {
    set(row, reg, {RegisterRule::How::Offset, factored * cie_.data_alignment});
  }
  void restore(Row& row, std::uint64_t reg) {
    if (reg == rbp_register) {
      row.rbp = initial_.rbp;
    } else if (reg == cie_.return_register) {
      row.return_address = initial_.return_address;
    }
  }

  // The opcodes with their operation in all eight bits (DW_CFA_*).
  bool extended(Reader& read, std::uint8_t op, Row& row, std::uintptr_t& location) {
    switch (op) {
    case 0x00:
      return true; // nop
    case 0x01:
      return read.pointer(cie_.fde_encoding, 0, location); // set_loc
    case 0x02:
      location += read.byte() * cie_.code_alignment;
      return true;
    case 0x03:
      location += read.fixed<std::uint16_t>() * cie_.code_alignment;
      return true;
    case 0x04:
      location += read.fixed<std::uint32_t>() * cie_.code_alignment;
      return true;
    case 0x05: { // offset_extended
      const std::uint64_t reg = read.uleb();
      set_offset(row, reg, static_cast<std::int64_t>(read.uleb()));
      return true;
    }
    case 0x06:
      restore(row, read.uleb());
      return true;
    case 0x07:
      set(row, read.uleb(), {RegisterRule::How::Undefined, 0});
      return true;
    case 0x08:
      set(row, read.uleb(), {RegisterRule::How::Same, 0});
      return true;
    case 0x09:   // register
    case 0x14: { // val_offset
      set(row, read.uleb(), {RegisterRule::How::Other, 0});
      read.uleb();
      return true;
    }
    case 0x0a: // remember_state
      if (remembered_ == saved_.size()) {
        return false;
      }
      saved_[remembered_++] = row;
      return true;
    case 0x0b: // restore_state
      if (remembered_ == 0) {
        return false;
      }
      row = saved_[--remembered_];
      return true;
    case 0x0c: // def_cfa
      row.cfa_register = read.uleb();
      row.cfa_offset = static_cast<std::int64_t>(read.uleb());
      row.cfa_expression = false;
      return true;
    case 0x0d: // def_cfa_register
      row.cfa_register = read.uleb();
      row.cfa_expression = false;
      return true;
    case 0x0e:
      row.cfa_offset = static_cast<std::int64_t>(read.uleb());
      return true;
    case 0x0f: // def_cfa_expression
      row.cfa_expression = true;
      read.skip(read.uleb());
      return true;
    case 0x10:   // expression
    case 0x16: { // val_expression
      set(row, read.uleb(), {RegisterRule::How::Other, 0});
      read.skip(read.uleb());
      return true;
    }
    case 0x11: { // offset_extended_sf
      const std::uint64_t reg = read.uleb();
      set_offset(row, reg, read.sleb());
      return true;
    }
    case 0x12: // def_cfa_sf
      row.cfa_register = read.uleb();
      row.cfa_offset = read.sleb() * cie_.data_alignment;
      row.cfa_expression = false;
      return true;
    case 0x13:
      row.cfa_offset = read.sleb() * cie_.data_alignment;
      return true;
    case 0x15: // val_offset_sf
      set(row, read.uleb(), {RegisterRule::How::Other, 0});
      read.sleb();
      return true;
    case 0x2e:
      read.uleb();
      return true; // GNU_args_size
    case 0x2f: {   // GNU_negative_offset_extended
      const std::uint64_t reg = read.uleb();
      set_offset(row, reg, -static_cast<std::int64_t>(read.uleb()));
      return true;
    }
    default:
      return false;
    }
  }

  const Cie& cie_;
  const Row& initial_;
  std::array<Row, 8> saved_;
  std::size_t remembered_ = 0;
};

// The FDE covering `address` in the object whose .eh_frame_hdr is `header`, by its binary search
// table; null when none does (or the table is not the usual one).
const std::uint8_t* find_fde(const std::uint8_t* header, std::uintptr_t address) {
  constexpr std::uint8_t table_encoding = pe_datarel | pe_sdata4;
  if (header[0] != 1 || header[2] != pe_udata4 || header[3] != table_encoding ||
      header[1] == pe_omit) {
    return nullptr;
  }
  Reader read(header + 4, header + 4 + 16);
  std::uintptr_t eh_frame = 0;
  if (!read.pointer(header[1], 0, eh_frame)) {
    return nullptr;
  }
  const auto count = read.fixed<std::uint32_t>();
  struct Entry {
    std::int32_t start;
    std::int32_t fde;
  };
  const std::uint8_t* table = read.at();
  const auto base = reinterpret_cast<std::uintptr_t>(header);
  const auto entry = [&](std::size_t i) {
    Entry e{};
    std::memcpy(&e, table + i * sizeof(Entry), sizeof e);
    return e;
  };
  // The last entry starting at or before `address`.
  std::size_t low = 0;
  std::size_t high = count;
  while (low < high) {
    const std::size_t middle = low + (high - low) / 2;
    if (base + static_cast<std::uintptr_t>(std::intptr_t{entry(middle).start}) <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low == 0) {
    return nullptr;
  }
  return reinterpret_cast<const std::uint8_t*>(base +
                                               static_cast<std::uintptr_t>(entry(low - 1).fde));
}

FrameRule rule_of(const Row& row) {
  FrameRule rule;
  if (row.return_address.how == RegisterRule::How::Undefined) {
    rule.kind = FrameRule::Kind::Outermost;
    return rule;
  }
  const bool cfa_usable =
      !row.cfa_expression && (row.cfa_register == rsp_register || row.cfa_register == rbp_register);
  const bool rbp_usable =
      row.rbp.how == RegisterRule::How::Same || row.rbp.how == RegisterRule::How::Offset;
  if (!cfa_usable || !rbp_usable || row.return_address.how != RegisterRule::How::Offset) {
    return rule;
  }
  rule.kind = FrameRule::Kind::Frame;
  rule.cfa_from_rbp = row.cfa_register == rbp_register;
  rule.cfa_offset = row.cfa_offset;
  rule.rbp_saved = row.rbp.how == RegisterRule::How::Offset;
  rule.rbp_offset = row.rbp.offset;
  rule.return_offset = row.return_address.offset;
  return rule;
}

#endif

} // namespace

FrameRule rule_at(std::uintptr_t return_address) noexcept {
#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
  // The call instruction's address: a call that ends a function returns to the next one.
  const std::uintptr_t call = return_address - 1;
  dl_find_object object{};
  if (_dl_find_object(reinterpret_cast<void*>(call), &object) != 0 ||
      object.dlfo_eh_frame == nullptr) {
    return {};
  }
  const std::uint8_t* fde = find_fde(static_cast<const std::uint8_t*>(object.dlfo_eh_frame), call);
  const std::uint8_t* begin = nullptr;
  const std::uint8_t* end = nullptr;
  if (fde == nullptr || !record(fde, begin, end)) {
    return {};
  }
  Reader read(begin, end);
  const auto cie_offset = read.fixed<std::uint32_t>(); // back from this field, to its CIE
  Cie cie;
  if (cie_offset == 0 || !read_cie(begin - cie_offset, cie)) {
    return {};
  }
  std::uintptr_t start = 0;
  std::uintptr_t range = 0;
  if (!read.pointer(cie.fde_encoding, 0, start) ||
      !read.pointer(cie.fde_encoding & 0x0f, 0, range) || call < start || call - start >= range) {
    return {};
  }
  if (cie.augmented) {
    read.skip(read.uleb());
  }
  Row initial;
  std::uintptr_t location = start;
  if (!Program(cie, initial).run(Reader(cie.instructions, cie.end), initial, location, call)) {
    return {};
  }
  Row row = initial;
  if (!Program(cie, initial).run(read, row, location, call)) {
    return {};
  }
  return rule_of(row);
#else
  (void)return_address;
  return {};
#endif
}

} // namespace hotscope::unwind::detail
