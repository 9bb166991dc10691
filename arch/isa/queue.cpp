#include "arch/isa/queue.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "arch/isa/syntax.hpp"

namespace tessera::arch {

const std::vector<QueueKind>& all_queue_kinds() {
  static const std::vector<QueueKind> kinds = {QueueKind::dma, QueueKind::pe, QueueKind::noc, QueueKind::vec};
  return kinds;
}

const char* name_of(QueueKind kind) {
  switch (kind) {
    case QueueKind::dma:
      return "dma";
    case QueueKind::pe:
      return "pe";
    case QueueKind::noc:
      return "noc";
    case QueueKind::vec:
      return "vec";
  }
  return "?";
}

const char* queues_running(QueueKind kind) {
  switch (kind) {
    case QueueKind::dma:
      return "the DMA queues (dma0, dma1, ...)";
    case QueueKind::pe:
      return "the pe queue";
    case QueueKind::noc:
      return "the noc queue";
    case QueueKind::vec:
      return "the vec queue";
  }
  return "?";
}

std::string name_of(const QueueId& queue) {
  if (queue.kind == QueueKind::dma) return fmt::format("dma{}", queue.index);
  return name_of(queue.kind);
}

std::optional<QueueId> parse_queue(std::string_view word) {
  if (word == "pe") return QueueId{QueueKind::pe, 0};
  if (word == "noc") return QueueId{QueueKind::noc, 0};
  if (word == "vec") return QueueId{QueueKind::vec, 0};
  constexpr std::string_view kDma = "dma";
  const std::string_view engine = word.substr(std::min(word.size(), kDma.size()));
  // Six digits keep the engine number well inside an int.
  if (word.substr(0, kDma.size()) != kDma || engine.empty() || engine.size() > 6 ||
      !std::all_of(engine.begin(), engine.end(), syntax::is_digit))
    return std::nullopt;
  int index = 0;
  for (char c : engine) index = index * 10 + (c - '0');
  return QueueId{QueueKind::dma, index};
}

}  // namespace tessera::arch
