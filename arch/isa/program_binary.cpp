// The binary form of a tile program (program_binary.hpp). Every value type of a program lists its fields
// once: in its own static `fields` (arch/isa/fields.hpp; a tensor, a view, a fill, most instruction kinds),
// or in `fields` below; one encoder and one decoder walk those lists: a number is its bytes, a flag one byte,
// an enum its underlying byte (checked against the enum's last value when read), a string or sequence its
// count then its elements (a sequence of numbers in one copy), an optional a flag then its value, an optional
// of a table (a tensor's view or fill) a flag per kind of the table then the fields of the one flagged, the
// Operation its kind's index in the instruction table then its fields.
#include "arch/isa/program_binary.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tessera::arch {
namespace {

constexpr char kMagic[8] = {'t', 'p', 'r', 'o', 'g', 'b', 'i', 'n'};

// A field added to one of these structs must be added to its field list too (its own `fields`, or VecOp's
// below): the sizes catch most additions at compile time (where they do not hold, e.g. another ABI, check the
// lists and update the sizes).
static_assert(sizeof(TensorRegion) == 40 && sizeof(DmaLoad) == 80 && sizeof(DmaStore) == 64 &&
                  sizeof(PeMatmul) == 88 && sizeof(PeConv) == 160 && sizeof(PePost) == 72 &&
                  sizeof(NocSend) == 64 && sizeof(VecOp) == 224 && sizeof(VecRope) == 96 &&
                  sizeof(VecRoute) == 96,
              "an instruction kind's fields changed: update its fields() list (its own file; VecOp's here)");
static_assert(
    sizeof(Im2colView) == 88 && sizeof(BlockDiagonalView) == 48 && sizeof(RowGatherView) == 32 &&
        sizeof(RopeTableFill) == 16 && sizeof(ValuesFill) == 24,
    "a view's or fill's fields changed: update its fields() list (arch/isa/views/, arch/isa/fills/)");

// The fields of each value type without a list of its own, in the order they travel. `visit` is called on
// each (a reference to it: the encoder reads it, the decoder assigns it). VecOp's stays here while its kinds
// are reworked (arch/isa/vec_op.hpp); moving it to a static `fields` there, as the other kinds have, changes
// no byte.
template <class F>
void fields(VecOp& op, F& visit) {
  visit(op.kind), visit(op.dtype), visit(op.out_dtype);
  visit(op.x_address), visit(op.y_address), visit(op.g_address), visit(op.b_address), visit(op.o_address);
  visit(op.x_pitch_bytes), visit(op.y_pitch_bytes), visit(op.o_pitch_bytes), visit(op.rows), visit(op.cols);
  visit(op.chain), visit(op.scale), visit(op.causal_shift), visit(op.eps);
  visit(op.ih), visit(op.iw), visit(op.e), visit(op.q), visit(op.r), visit(op.s), visit(op.stride);
  visit(op.pad_top), visit(op.pad_left), visit(op.average), visit(op.first), visit(op.by_inverse_sum);
  visit(op.parts);
}
template <class F>
void fields(QueueId& queue, F& visit) {
  visit(queue.kind), visit(queue.index);
}
template <class F>
void fields(SemaphoreRef& semaphore, F& visit) {
  visit(semaphore.id), visit(semaphore.core);
}
template <class F>
void fields(SemaphoreWait& wait, F& visit) {
  visit(wait.semaphore), visit(wait.count);
}
template <class F>
void fields(Instruction& instruction, F& visit) {
  // `line` stays behind: it locates the instruction in a text the receiver never sees.
  visit(instruction.queue), visit(instruction.operation), visit(instruction.waits),
      visit(instruction.signals);
}
template <class F>
void fields(Coord& coord, F& visit) {
  visit(coord.row), visit(coord.col);
}
template <class F>
void fields(CoreProgram& core, F& visit) {
  visit(core.coord), visit(core.instructions);
}
template <class F>
void fields(OpBinding& op, F& visit) {
  visit(op.kind), visit(op.attributes);
}
template <class F>
void fields(MeshSpec& mesh, F& visit) {
  visit(mesh.rows), visit(mesh.cols);
}
template <class F>
void fields(Program& program, F& visit) {
  // source_file stays behind, as an instruction's line.
  visit(program.name), visit(program.mesh), visit(program.op), visit(program.tensors);
  visit(program.semaphores), visit(program.cores);
}

// The last value of each enum that travels: a byte past it is a corrupt message.
constexpr DType last_of(DType) {
  return DType::int32;
}
constexpr Dataflow last_of(Dataflow) {
  return Dataflow::rs;
}
constexpr VectorKind last_of(VectorKind) {
  return static_cast<VectorKind>(kVectorKindCount - 1);
}
constexpr ElementFn last_of(ElementFn) {  // a vector chain's and an output path's steps
  return ElementFn::scale;
}
constexpr QueueKind last_of(QueueKind) {
  return QueueKind::vec;
}
constexpr TensorRole last_of(TensorRole) {
  return TensorRole::view;
}

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
// An optional of a table (std::variant) of kinds: a tensor's view or fill.
template <class T>
struct IsOptionalTable : std::false_type {};
template <class... Kinds>
struct IsOptionalTable<std::optional<std::variant<Kinds...>>> : std::true_type {};
template <class T>
struct IsBoxed : std::false_type {};
template <class T>
struct IsBoxed<Boxed<T>> : std::true_type {};
template <class T>
struct IsStdVector : std::false_type {};
template <class T>
struct IsStdVector<std::vector<T>> : std::true_type {};

// A container walked as a count and its elements: begin/end, size, push_back (std::vector, or an
// instruction's small inline vector of waits or signals).
template <class T, class = void>
struct IsSequence : std::false_type {};
template <class T>
struct IsSequence<T,
                  std::void_t<typename T::value_type, decltype(std::declval<T&>().size()),
                              decltype(std::declval<T&>().begin()), decltype(std::declval<T&>().end()),
                              decltype(std::declval<T&>().push_back(std::declval<typename T::value_type>()))>>
    : std::true_type {};

using Attributes = std::map<std::string, std::string>;

template <class T>
constexpr bool kRawNumber = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}

  template <class T>
  void operator()(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.push_back(value ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      number(static_cast<std::underlying_type_t<T>>(value));
    } else if constexpr (kRawNumber<T>) {
      number(value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      count(value.size());
      out_.append(value);
    } else if constexpr (IsOptionalTable<T>::value) {
      // A flag per kind of the table, at most one set: the form a tensor's separate optional views and fills
      // had, kept.
      for_each_kind<typename T::value_type>([&](auto kind) {
        using Kind = typename decltype(kind)::type;
        const Kind* held = value ? std::get_if<Kind>(&*value) : nullptr;
        (*this)(held != nullptr);
        if (held) (*this)(*held);
      });
    } else if constexpr (IsOptional<T>::value) {
      (*this)(value.has_value());
      if (value) (*this)(*value);
    } else if constexpr (std::is_same_v<T, Operation>) {
      number(static_cast<uint8_t>(value.index()));
      std::visit([&](const auto& kind) { (*this)(kind); }, value);
    } else if constexpr (IsBoxed<T>::value) {
      (*this)(*value);
    } else if constexpr (std::is_same_v<T, Attributes>) {
      count(value.size());
      for (const auto& [key, text] : value) (*this)(key), (*this)(text);
    } else if constexpr (IsSequence<T>::value) {
      count(value.size());
      using Element = typename T::value_type;
      if constexpr (IsStdVector<T>::value && kRawNumber<Element>) {
        out_.append(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(Element));
      } else {
        for (const Element& element : value) (*this)(element);
      }
    } else if constexpr (HasFields<T>::value) {
      T::fields([&](const char*, auto member, auto&&...) { (*this)(value.*member); });
    } else {
      // The lists above take references to assign through; the encoder only reads them.
      fields(const_cast<T&>(value), *this);
    }
  }

 private:
  template <class Number>
  void number(Number value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void count(size_t size) { number(static_cast<uint64_t>(size)); }

  std::string& out_;
};

class Decoder {
 public:
  explicit Decoder(std::string_view bytes) : bytes_(bytes) {}

  template <class T>
  void operator()(T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      const auto flag = number<uint8_t>();
      TESSERA_ASSERT(flag <= 1, "a binary program's flag is 0 or 1");
      value = flag == 1;
    } else if constexpr (std::is_enum_v<T>) {
      const auto raw = number<std::underlying_type_t<T>>();
      static_assert(std::is_unsigned_v<std::underlying_type_t<T>>, "enums travel as unsigned bytes");
      TESSERA_ASSERT(raw <= static_cast<std::underlying_type_t<T>>(last_of(T{})),
                     "a binary program's enum value is one of its enum's");
      value = static_cast<T>(raw);
    } else if constexpr (kRawNumber<T>) {
      value = number<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      const size_t size = count(1);
      value.assign(bytes_.data() + at_, size);
      at_ += size;
    } else if constexpr (IsOptionalTable<T>::value) {
      value.reset();
      for_each_kind<typename T::value_type>([&](auto kind) {
        using Kind = typename decltype(kind)::type;
        bool present = false;
        (*this)(present);
        if (!present) return;
        TESSERA_ASSERT(!value, "a binary program's tensor holds at most one kind of a table");
        (*this)(value.emplace().template emplace<Kind>());
      });
    } else if constexpr (IsOptional<T>::value) {
      bool present = false;
      (*this)(present);
      if (present)
        (*this)(value.emplace());
      else
        value.reset();
    } else if constexpr (std::is_same_v<T, Operation>) {
      const auto kind = number<uint8_t>();
      TESSERA_ASSERT(kind < std::variant_size_v<Operation>, "a binary program's instruction kind is listed");
      emplace_kind(value, kind);
    } else if constexpr (IsBoxed<T>::value) {
      (*this)(*value);
    } else if constexpr (std::is_same_v<T, Attributes>) {
      const size_t size = count(2 * sizeof(uint64_t));  // a key and a value, each at least its length
      value.clear();
      for (size_t i = 0; i < size; ++i) {
        std::string key, text;
        (*this)(key), (*this)(text);
        value.emplace_hint(value.end(), std::move(key), std::move(text));
      }
    } else if constexpr (IsSequence<T>::value) {
      using Element = typename T::value_type;
      if constexpr (IsStdVector<T>::value && kRawNumber<Element>) {
        const size_t size = count(sizeof(Element));
        value.resize(size);
        // An empty vector's data() may be null, and memcpy from or to null is undefined even for 0 bytes
        // (UBSan, in every parallel run's worker: a program with no semaphore waits).
        if (size != 0) std::memcpy(value.data(), bytes_.data() + at_, size * sizeof(Element));
        at_ += size * sizeof(Element);
      } else {
        // Every element takes at least a byte: the count is checked against the bytes left before anything
        // is reserved.
        const size_t size = count(1);
        if constexpr (IsStdVector<T>::value) {
          value.clear();
          value.reserve(size);
        }
        TESSERA_ASSERT(value.size() == 0, "a decoded sequence starts empty");
        for (size_t i = 0; i < size; ++i) {
          value.push_back(Element{});
          (*this)(value[value.size() - 1]);
        }
      }
    } else if constexpr (HasFields<T>::value) {
      T::fields([&](const char*, auto member, auto&&...) { (*this)(value.*member); });
    } else {
      fields(value, *this);
    }
  }

  bool done() const { return at_ == bytes_.size(); }

 private:
  template <class Number>
  Number number() {
    TESSERA_ASSERT(sizeof(Number) <= bytes_.size() - at_, "a binary program is whole");
    Number value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  // A count of elements that take at least `element_bytes` each, checked against the bytes left.
  size_t count(size_t element_bytes) {
    const auto size = number<uint64_t>();
    TESSERA_ASSERT(size <= (bytes_.size() - at_) / element_bytes, "a binary program is whole");
    return static_cast<size_t>(size);
  }
  template <size_t Kind = 0>
  void emplace_kind(Operation& operation, size_t kind) {
    if constexpr (Kind < std::variant_size_v<Operation>) {
      if (kind == Kind) {
        (*this)(operation.emplace<Kind>());
        return;
      }
      emplace_kind<Kind + 1>(operation, kind);
    }
  }

  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string write_program_binary(const Program& program) {
  std::string out;
  append_program_binary(program, out);
  return out;
}

void append_program_binary(const Program& program, std::string& out) {
  // Most instructions take 60-140 bytes (a 4096^3 GEMM's 128 on average): one allocation for a typical
  // program, where a regrowth would copy all written so far.
  out.reserve(out.size() + static_cast<size_t>(160 * program.instruction_count()) + 4096);
  out.append(kMagic, sizeof kMagic);
  Encoder encode(out);
  encode(program);
}

Program read_program_binary(std::string_view bytes) {
  TESSERA_ASSERT(bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0,
                 "a binary program starts with its magic bytes");
  Decoder decode(bytes.substr(sizeof kMagic));
  Program program;
  decode(program);
  TESSERA_ASSERT(decode.done(), "a binary program ends where its last field does");
  return program;
}

}  // namespace tessera::arch
