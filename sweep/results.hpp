// A sweep's results.csv: a view of the points' report.json files (DESIGN.md: report.json is the truth). One
// row per point x workload x op and a per-workload total row ("(total)"); a job that failed is one row with
// its status and message. Rows of a job depend only on its record, so a resumed, sharded or merged sweep
// writes the same bytes as an uninterrupted one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace tessera::sweep {

// How one job (a point's workload) ended. ok and mismatch (numerics failed) have a report; the others a
// message: invalid (tessera run rejected the design point, e.g. no mapping fits its SRAM; not retried),
// timeout, killed (a signal), crashed (any other exit). Only ok, mismatch and invalid count as finished when
// a sweep resumes.
struct JobRecord {
  std::string status;
  std::string message;
  nlohmann::json report;  // for ok and mismatch
  bool finished() const { return status == "ok" || status == "mismatch" || status == "invalid"; }
};

// The record of a run that printed `report_text` (a report.json): ok or mismatch; crashed if it is not one.
JobRecord record_of_report(const std::string& report_text);

std::string csv_header(const SweepSpec& spec);
// The rows of job (point, workload), each ending in a newline.
std::string csv_rows(const SweepSpec& spec, const Point& point, const std::string& workload_name,
                     const JobRecord& record);

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text);

}  // namespace tessera::sweep
