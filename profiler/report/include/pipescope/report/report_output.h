// The three renderings of a run report; they only format RunReport, never compute.
#pragma once

#include <ostream>
#include <string>

#include "pipescope/analysis/run_report.h"

namespace pipescope::report {

// Findings first, then compact tables; at most 100 columns.
void write_report_text(std::ostream& out, const analysis::RunReport& report);
// The JSON document of docs/report-json.md (schema_version kRunReportSchemaVersion).
std::string report_json(const analysis::RunReport& report);
// One self-contained HTML file: inline CSS and SVG, no script, no external reference.
std::string report_html(const analysis::RunReport& report);

}  // namespace pipescope::report
