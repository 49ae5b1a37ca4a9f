#include "data/packing.hpp"

#include <map>

#include "plait/sdk/error.hpp"

namespace plait {
namespace {

// The segments of document [begin, end): one, or pieces of T + 1 tokens overlapping by one.
void cut_document(int64_t begin, int64_t end, int64_t T, std::vector<Segment>& out, PackingReport& report) {
  ++report.documents;
  if (end - begin < 2) {
    ++report.left_out;
    return;
  }
  if (end - begin - 1 > T) ++report.cut;
  for (int64_t from = begin; from + 1 < end; from += T) out.push_back({from, std::min(end, from + T + 1)});
}

}  // namespace

std::vector<PackedRow> pack_documents(const TokenFile& file, int64_t T, PackingReport* report_out) {
  PLAIT_CHECK(file.documents() > 0, concat("[data] ", file.path(), " records no document starts to pack"),
              "prepare it with tools/prepare_data.py, or set packing = false");
  PackingReport report;
  std::vector<Segment> segments;
  for (int64_t d = 0; d < file.documents(); ++d) {
    const int64_t end = d + 1 < file.documents() ? file.document_start(d + 1) : file.size();
    cut_document(file.document_start(d), end, T, segments, report);
  }
  PLAIT_CHECK(!segments.empty(), concat("[data] ", file.path(), ": every document is one token long; none has a target"),
              "prepare the data from documents with text");
  std::vector<PackedRow> rows;
  std::multimap<int64_t, std::size_t> room;  // free positions -> row, for the rows not full
  for (const Segment& s : segments) {
    const int64_t need = s.end - s.begin - 1;
    auto fit = room.lower_bound(need);  // the fullest row with room enough
    std::size_t row;
    int64_t free_after;
    if (fit == room.end()) {
      row = rows.size();
      rows.emplace_back();
      free_after = T - need;
    } else {
      row = fit->second;
      free_after = fit->first - need;
      room.erase(fit);
    }
    if (free_after > 0) room.emplace(free_after, row);
    rows[row].segments.push_back(s);
    rows[row].counted += file.counted(s.begin + 1, s.end);
    report.filled += need;
  }
  report.rows = static_cast<int64_t>(rows.size());
  report.positions = report.rows * T;
  if (report_out != nullptr) *report_out = report;
  return rows;
}

}  // namespace plait
