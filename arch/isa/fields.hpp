// Field lists (docs/extending.md, "A tensor view"): a value type of the program names each of its fields
// once, in a static `fields(visit)` that calls visit("name", &Type::member) per field, in the order they
// travel in the binary form (program_binary.cpp). Comparison (equal_fields), the binary form and, for a
// tensor view or an input fill, the text reader's and writer's key=value options walk that list, so a field
// added to the list is compared, sent and written without another line; one left out of it is none of those.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <variant>

namespace tessera::arch {

// What the text reader accepts for a view's key=number field (a visit's optional third argument): a positive
// number unless the list says otherwise (an im2col view's pad= may be 0).
enum class FieldText : uint8_t { positive, non_negative };

// A visitor that takes any field: what HasFields asks a type's list to accept.
struct AnyField {
  template <class... Arguments>
  void operator()(Arguments&&...) const {}
};

// Whether T lists its fields.
template <class T, class = void>
struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(T::fields(AnyField{}))>> : std::true_type {};

// Equal when every listed field is: the one operator== of a type with a field list.
template <class T>
bool equal_fields(const T& left, const T& right) {
  bool equal = true;
  T::fields([&](const char*, auto member, auto&&...) { equal = equal && left.*member == right.*member; });
  return equal;
}

// A kind of a table, passed as a value: decltype(tag)::type is the kind.
template <class T>
struct KindTag {
  using type = T;
};

// Calls kind(KindTag<T>{}) for each alternative T of a table (a std::variant of kinds), in order.
template <class Table, class Kind, size_t... Index>
void for_each_kind_of(Kind&& kind, std::index_sequence<Index...>) {
  (kind(KindTag<std::variant_alternative_t<Index, Table>>{}), ...);
}
template <class Table, class Kind>
void for_each_kind(Kind&& kind) {
  for_each_kind_of<Table>(kind, std::make_index_sequence<std::variant_size_v<Table>>{});
}

}  // namespace tessera::arch
