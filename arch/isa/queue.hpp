// The unit queues of a core (DESIGN.md, "Timing model"): each DMA engine, the PE array, the NoC engine and
// the vector unit run their own in-order queue of the tile program. Which instruction runs on which queue is
// the instruction table's to say (instruction_table.hpp, queue_of).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::arch {

enum class QueueKind : uint8_t { dma, pe, noc, vec };
const std::vector<QueueKind>& all_queue_kinds();
const char* name_of(QueueKind kind);         // "dma", "pe", "noc", "vec"
const char* queues_running(QueueKind kind);  // "the DMA queues (dma0, dma1, ...)", for messages

struct QueueId {
  QueueKind kind = QueueKind::pe;
  int index = 0;  // DMA engine number; 0 for pe, noc and vec
  bool operator==(const QueueId& other) const { return kind == other.kind && index == other.index; }
};
std::string name_of(const QueueId& queue);  // "dma0", "pe", "noc", "vec"
// "pe", "noc", "vec", "dma<engine>"; nothing when the word names no queue.
std::optional<QueueId> parse_queue(std::string_view word);

}  // namespace tessera::arch
