// Component tests of the resources a transfer crosses (sim/fabric): SRAM banks, NoC links and multicast
// trees, DRAM channels. Closed-form expectations, each derived in a comment.
#include "sim/fabric.hpp"

#include <gtest/gtest.h>

namespace tessera::sim {

namespace {

arch::ArchSpec machine(int rows, int cols) {
  arch::ArchSpec spec;
  spec.name = "test";
  spec.clock_ghz = 1.0;
  spec.mesh = arch::MeshSpec{rows, cols};
  spec.noc.link_bytes_per_cycle = 64;
  spec.noc.router_latency_cycles = 2;
  spec.dram.bandwidth_gbps = 256;
  spec.dram.channels = 2;
  spec.dram.latency_cycles = 100;
  spec.core.pe_array.rows = spec.core.pe_array.cols = 8;
  spec.core.sram.kib = 64;
  spec.core.sram.banks = 4;
  spec.core.sram.bank_width_bytes = 64;
  spec.derive();
  return spec;
}

constexpr Tick cycles(int64_t n) {
  return cycles_to_ticks(n);
}

}  // namespace

TEST(SramBanks, ContiguousRowsSpreadOverEveryBank) {
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  std::vector<int64_t> words(4, 0);
  // 4 rows of 512 B packed: 32 words of 64 B, 8 per bank.
  fabric.count_bank_words(0, 4, 512, 512, 1, words);
  EXPECT_EQ(words, (std::vector<int64_t>{8, 8, 8, 8}));
}

TEST(SramBanks, APitchOfOneBankRowPutsAColumnOfWordsInOneBank) {
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  std::vector<int64_t> words(4, 0);
  // 16 rows of 64 B (one word) at a pitch of 256 B (4 banks x 64 B): every row starts on bank 0.
  fabric.count_bank_words(0, 16, 64, 256, 1, words);
  EXPECT_EQ(words, (std::vector<int64_t>{16, 0, 0, 0}));
}

TEST(SramBanks, PackedRowsOfWholeWordsCountAsOneRun) {
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  std::vector<int64_t> words(4, 0);
  // 3 packed rows of 128 B from 0x80 (word 2): words 2..7, on banks 2, 3, 0, 1, 2, 3; twice.
  fabric.count_bank_words(0x80, 3, 128, 128, 2, words);
  EXPECT_EQ(words, (std::vector<int64_t>{2, 2, 4, 4}));
  // Packed rows that do not start on a word: each row counts the words it touches, so the word two rows share
  // counts twice. Rows of 64 B from byte 32: words 0-1, then 1-2.
  std::fill(words.begin(), words.end(), 0);
  fabric.count_bank_words(32, 2, 64, 64, 1, words);
  EXPECT_EQ(words, (std::vector<int64_t>{1, 2, 1, 0}));
}

TEST(SramBanks, SecondStreamOnTheSameBankWaitsForTheFirst) {
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  // 128 words into bank 0 over 128 cycles: the bank is fully booked for the window.
  const SramRegion column{0, 0, 128, 64, 256};
  EXPECT_EQ(fabric.book_sram_region(column, 1, 0, cycles(128)), 0u);
  // The same 128 words again in the same window: the bank serves them after the first stream, 128 cycles
  // late.
  EXPECT_EQ(fabric.book_sram_region(column, 1, 0, cycles(128)), cycles(128));
  // A stream on the other banks in the same window is not delayed at all.
  const SramRegion elsewhere{0, 64, 128, 64, 256};
  EXPECT_EQ(fabric.book_sram_region(elsewhere, 1, 0, cycles(128)), 0u);
}

TEST(SramBanks, BanksBookedInStepTakeWhatEachBankBookedAloneWouldTake) {
  // While every booking on a core is uniform over its banks, the Fabric books its first bank alone and lets
  // it stand for the others (Fabric::book_pe_traffic); the first booking that is not uniform copies it to
  // them. Reference: one calendar per bank, each taking its own words of every booking.
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  std::vector<BandwidthCalendar> reference(4, BandwidthCalendar(64.0));
  const auto book = [&](Tick start, Tick end, const std::vector<int64_t>& words) {
    Tick worst = end;
    for (size_t bank = 0; bank < reference.size(); ++bank)
      if (words[bank] != 0)
        worst = std::max(worst, reference[bank].book_spread(start, end, words[bank] * 64.0));
    EXPECT_EQ(fabric.book_pe_traffic(0, start, end, words), worst - end) << "booking at " << start;
    return worst - end;
  };
  // Uniform and overlapping: 120 words a bank (a bank takes one a cycle) over 128 cycles, then again 64
  // cycles later: epoch 0 has 8 words left, the 64 cycles of epoch 1 in the window take 64, 48 spill.
  EXPECT_EQ(book(0, cycles(128), {120, 120, 120, 120}), 0u);
  EXPECT_GT(book(cycles(64), cycles(192), {120, 120, 120, 120}), 0u);
  // Bank 2 alone: it still holds both uniform streams, so it is late too.
  EXPECT_GT(book(cycles(64), cycles(192), {0, 0, 64, 0}), 0u);
  // Uniform again, now each bank on its own calendar: bank 2 is the slowest.
  const Tick others = book(cycles(100), cycles(300), {50, 50, 0, 50});
  EXPECT_GT(book(cycles(100), cycles(300), {50, 50, 50, 50}), others);
}

TEST(SramBanks, BankClassesSplitAndEachBankTakesWhatItWouldTakeAlone) {
  // Banks that took the same words in every booking share one booked calendar (a class); a booking that
  // gives a class's banks different words splits it. Reference: one calendar per bank. The bookings come from
  // word patterns that keep some banks together and split others, in a fixed pseudorandom order, windows
  // overlapping so that the banks contend.
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  std::vector<BandwidthCalendar> reference(4, BandwidthCalendar(64.0));
  const std::vector<std::vector<int64_t>> patterns = {{40, 40, 40, 40}, {30, 30, 0, 0},   {0, 0, 25, 25},
                                                      {20, 20, 35, 35}, {10, 12, 35, 35}, {0, 9, 9, 0}};
  uint64_t state = 12345;
  Tick start = 0;
  for (int i = 0; i < 200; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    // The early bookings keep to the first four patterns (classes split in halves), the later ones use all.
    const std::vector<int64_t>& words = patterns[(state >> 33) % (i < 60 ? 4 : patterns.size())];
    const Tick end = start + cycles(40 + static_cast<int64_t>((state >> 20) % 80));
    Tick worst = end;
    for (size_t bank = 0; bank < reference.size(); ++bank)
      if (words[bank] != 0)
        worst =
            std::max(worst, reference[bank].book_spread(start, end, static_cast<double>(words[bank]) * 64.0));
    ASSERT_EQ(fabric.book_pe_traffic(0, start, end, words), worst - end) << "booking " << i;
    start += cycles(10 + static_cast<int64_t>((state >> 40) % 30));
  }
}

TEST(NocLinks, AStreamPaysARouterLatencyPerRouterAndItsBytesOverTheLink) {
  const arch::ArchSpec spec = machine(1, 3);
  Fabric fabric(spec);
  // core 0,0 -> core 0,2: two mesh links, then the ejection port: 3 routers of 2 cycles; 256 B issued over 4
  // cycles at 64 B/cycle take 4 cycles on each link, pipelined: the tail leaves the last port 4 + 3 * 2
  // cycles after issue, the head 3 * 2.
  Tick first = ~Tick{0};
  EXPECT_EQ(fabric.send_stream(0, 2, Flow{0, cycles(4)}, 256, first), cycles(4 + 3 * 2));
  EXPECT_EQ(first, cycles(3 * 2));
  EXPECT_EQ(fabric.traffic().noc_byte_hops, 2 * 256);
  EXPECT_EQ(fabric.send_latency(0, 2) + fabric.burst_ticks(256, false), cycles(4 + 3 * 2));
}

TEST(NocLinks, ConcurrentStreamsOnOneLinkShareItsBandwidth) {
  const arch::ArchSpec spec = machine(1, 2);
  Fabric fabric(spec);
  // Two streams of 8 KiB from core 0,0 to core 0,1, each issued over the same 128 cycles at 64 B/cycle: 16
  // KiB over a 64 B/cycle link is 256 cycles; the second is done no earlier.
  Tick first = ~Tick{0};
  const Tick one = fabric.send_stream(0, 1, Flow{0, cycles(128)}, 8192, first);
  const Tick two = fabric.send_stream(0, 1, Flow{0, cycles(128)}, 8192, first);
  EXPECT_EQ(one, cycles(128 + 2 * 2));
  EXPECT_GE(two, cycles(256));
  EXPECT_LE(two, cycles(256 + 2 * 2 + 2));  // plus the routers and the rounding of the spill
}

TEST(NocLinks, AStreamFasterThanALinkIsSlowedToTheLinksRate) {
  const arch::ArchSpec spec = machine(1, 2);
  Fabric fabric(spec);
  // 16 KiB issued in 128 cycles (128 B/cycle) over a 64 B/cycle path: the link takes 256 cycles.
  Tick first = ~Tick{0};
  const Tick done = fabric.send_stream(0, 1, Flow{0, cycles(128)}, 16384, first);
  EXPECT_GE(done, cycles(256));
  EXPECT_LE(done, cycles(256 + 2 * 2 + 2));
}

TEST(Multicast, TheSharedTrunkOfTheTreeCarriesOneCopy) {
  arch::ArchSpec spec = machine(1, 4);
  spec.dram.channels = 1;  // attached at 0,0
  spec.derive();
  Fabric fabric(spec);
  fabric.begin_load({1, 2, 3});
  Tick first = ~Tick{0};
  fabric.load_stream(0, Flow{0, cycles(4)}, 256, first);
  // XY routes from 0,0 to 0,1, 0,2, 0,3 share their links: 3 links in all, not 1 + 2 + 3.
  EXPECT_EQ(fabric.traffic().noc_byte_hops, 3 * 256);
  EXPECT_EQ(fabric.traffic().noc_bytes, 3 * 256);    // delivered once to each destination
  EXPECT_EQ(fabric.traffic().dram_read_bytes, 256);  // read once
}

TEST(DramChannels, AReadPaysTheLatencyAndTheChannelsBandwidth) {
  const arch::ArchSpec spec = machine(1, 1);
  Fabric fabric(spec);
  fabric.begin_load({0});
  // 256 GB/s over 2 channels at 1 GHz: 128 B/cycle a channel. 256 B issued over 4 cycles (an engine of
  // 64 B/cycle) pass the channel in those 4 cycles, then 100 cycles of latency, then the ejection port (4
  // cycles at 64 B/cycle, pipelined, after one router of 2 cycles).
  Tick first = ~Tick{0};
  EXPECT_EQ(fabric.load_stream(0, Flow{0, cycles(4)}, 256, first), cycles(4 + 100 + 2));
  EXPECT_EQ(first, cycles(100 + 2));
  // A burst's uncontended round trip: the latency, one router, 4 cycles at the slower of the channel (128
  // B/cycle) and the port (64 B/cycle).
  EXPECT_EQ(fabric.load_latency(0) + fabric.burst_ticks(256, true), cycles(100 + 2 + 4));
}

}  // namespace tessera::sim
